//go:build !(linux || darwin)

package sgpebble

import "errors"

// diskFree cannot read the free space here: the reserve guard is off.
func diskFree(string) (uint64, error) {
	return 0, errors.New("sgpebble: free space unknown on this system")
}
