package herald

import (
	"maps"
	"slices"
	"strings"
)

// describeResult renders what a carrier reported beyond delivery
// (Message.Result) for the reason of the timeline entry that records it:
// " (execution: failure; reason: meter offline)", its keys in order; ""
// when it reported nothing.
func describeResult(result map[string]string) string {
	if len(result) == 0 {
		return ""
	}
	parts := make([]string, 0, len(result))
	for _, k := range slices.Sorted(maps.Keys(result)) {
		parts = append(parts, k+": "+result[k])
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
