// Package docs_test checks the documentation: every Go code block of README.md and docs/*.md is a
// whole, gofmt-formatted file that compiles (and passes go vet) against this module as it is now,
// so that no example shows an API that changed or never existed.
package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// block is one ```go fenced block of a Markdown file.
type block struct {
	file string // relative to the repository root, e.g. docs/runtime.md
	line int    // the line of the first line of code (1-based)
	src  []byte
}

// extractBlocks returns the ```go blocks of a Markdown text. A fence may be indented (a block in a
// list item); the indentation of the opening fence is removed from each line of the block.
func extractBlocks(file string, text []byte) ([]block, error) {
	var (
		out    []block
		cur    *block
		other  bool // inside a fence of another language
		indent string
		lineNo int
		buf    bytes.Buffer
	)
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t")
		fence := strings.HasPrefix(trimmed, "```")
		closing := fence && strings.TrimSpace(trimmed) == "```" // a closing fence has no info string
		if other {
			other = !closing // a fence of text, sh, java, …: skipped to its end
			continue
		}
		if cur == nil {
			if fence {
				if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "go" {
					cur = &block{file: file, line: lineNo + 1}
					indent = line[:len(line)-len(trimmed)]
					buf.Reset()
				} else {
					other = true
				}
			}
			continue
		}
		if closing {
			cur.src = slices.Clone(buf.Bytes())
			out = append(out, *cur)
			cur = nil
			continue
		}
		buf.WriteString(strings.TrimPrefix(line, indent))
		buf.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the go block is not closed", file, cur.line-1)
	}
	return out, nil
}

func TestExtractBlocks(t *testing.T) {
	md := "# t\n\n```text\n```go\n```\n\n- item:\n\n  ```go\n  package main\n\n  func main() {}\n  ```\n\n```go\npackage x\n```\n"
	got, err := extractBlocks("x.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(got), got)
	}
	if got[0].line != 10 || string(got[0].src) != "package main\n\nfunc main() {}\n" {
		t.Errorf("first block at line %d: %q", got[0].line, got[0].src)
	}
	if got[1].line != 16 || string(got[1].src) != "package x\n" {
		t.Errorf("second block at line %d: %q", got[1].line, got[1].src)
	}
	if _, err := extractBlocks("x.md", []byte("```go\npackage x\n")); err == nil {
		t.Error("an unclosed block was accepted")
	}
}

// sgpromImport marks a block that needs the Prometheus plugin's module (its own go.mod).
const sgpromImport = "github.com/streamsgroup/streamsgroup/plugin/sgprom"

// TestDocCodeBlocksCompile writes every Go block of README.md and docs/*.md as the main.go of a
// package of its own in a directory inside the module (so the module's packages and its
// dependencies resolve; the leading underscore keeps ./... patterns away from it) and runs go vet on
// them, which type-checks each one. A failure names the Markdown file and line.
func TestDocCodeBlocksCompile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root is not %s: %v", root, err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)

	var blocks []block
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		bs, err := extractBlocks(filepath.ToSlash(rel), text)
		if err != nil {
			t.Fatal(err)
		}
		if rel == "README.md" && len(bs) == 0 {
			t.Fatal("README.md has no go block: the quick start's app is expected there")
		}
		blocks = append(blocks, bs...)
	}

	// Per module (the core, or plugin/sgprom): the block directories, and what each one came from.
	type pkg struct {
		dir string
		b   block
	}
	byModule := map[string][]pkg{}
	scratch := fmt.Sprintf("_doccheck-%d", os.Getpid())
	fset := token.NewFileSet()
	for i, b := range blocks {
		f, err := parser.ParseFile(fset, b.file, b.src, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s:%d: a go block must be a whole Go file (a package clause, its imports, then code; elisions only in comments): %v", b.file, b.line, err)
			continue
		}
		if formatted, err := format.Source(b.src); err == nil && !bytes.Equal(formatted, b.src) {
			t.Errorf("%s:%d: the go block is not gofmt-formatted; gofmt gives:\n%s", b.file, b.line, formatted)
		}
		module := root
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == sgpromImport {
				module = filepath.Join(root, "plugin", "sgprom")
			}
		}
		slug := strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(strings.TrimSuffix(b.file, ".md"))
		dir := filepath.Join(scratch, fmt.Sprintf("b%03d_%s_%d", i, slug, b.line))
		full := filepath.Join(module, dir)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(filepath.Join(module, scratch)) })
		if err := os.WriteFile(filepath.Join(full, "main.go"), b.src, 0o644); err != nil {
			t.Fatal(err)
		}
		byModule[module] = append(byModule[module], pkg{dir: dir, b: b})
	}

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile the blocks: %v", err)
	}
	where := regexp.MustCompile(`(b\d{3}_[A-Za-z0-9_]+_\d+)[/\\]main\.go:(\d+)(?::\d+)?:\s*(.*)`)
	for module, pkgs := range byModule {
		args := []string{"vet"}
		origin := map[string]block{}
		for _, p := range pkgs {
			args = append(args, "./"+filepath.ToSlash(p.dir))
			origin[filepath.Base(p.dir)] = p.b
		}
		cmd := exec.Command(goBin, args...)
		cmd.Dir = module
		out, err := cmd.CombinedOutput()
		if err == nil {
			continue
		}
		mapped := 0
		for _, line := range strings.Split(string(out), "\n") {
			m := where.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			b, ok := origin[m[1]]
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			t.Errorf("%s:%d: %s", b.file, b.line+n-1, m[3])
			mapped++
		}
		if mapped == 0 {
			t.Errorf("go vet of the documentation's go blocks failed (%v):\n%s", err, out)
		}
	}
	t.Logf("%d go blocks checked", len(blocks))
}
