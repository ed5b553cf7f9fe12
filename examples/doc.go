// Package examples holds runnable programs built only on the public API of this module; each
// lives in its own folder below this one.
package examples
