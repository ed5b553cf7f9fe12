package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutRow is a folder row of docs/layout.md: | `folder/` | job |.
var layoutRow = regexp.MustCompile("(?m)^\\| `([^`]+)/` \\|")

// TestLayoutListsEveryFolder: docs/layout.md has a row for every top-level folder and for every
// folder with Go code (test data aside), and no row for a folder that does not exist.
func TestLayoutListsEveryFolder(t *testing.T) {
	root := ".."
	b, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range layoutRow.FindAllStringSubmatch(string(b), -1) {
		listed[m[1]] = true
	}
	want := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" && strings.Count(rel, "/") > 0 ||
				name == "target" || name == "node_modules" || name == "src" || name == "bin") {
				return filepath.SkipDir
			}
			if rel != "." && !strings.Contains(rel, "/") {
				want[rel] = true
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
				want[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, gone []string
	for d := range want {
		if !listed[d] {
			missing = append(missing, d)
		}
	}
	for d := range listed {
		if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(d))); err != nil || !st.IsDir() {
			gone = append(gone, d)
		}
	}
	slices.Sort(missing)
	slices.Sort(gone)
	if len(missing) > 0 {
		t.Errorf("docs/layout.md has no row for %v", missing)
	}
	if len(gone) > 0 {
		t.Errorf("docs/layout.md lists folders that do not exist: %v", gone)
	}
}
