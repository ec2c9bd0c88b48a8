package kube

import "unicode/utf8"

// MaxEventNote is the longest note of an events.k8s.io/v1 Event; the
// messages of conditions are cut at the same length.
const MaxEventNote = 1024

// Truncate shortens s to at most n bytes, marking the cut, on a rune
// boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
