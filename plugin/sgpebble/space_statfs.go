//go:build linux || darwin

package sgpebble

import "syscall"

// diskFree is the bytes free to this process on the file system of dir.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil //nolint:unconvert // the field types differ by system (linux, darwin)
}
