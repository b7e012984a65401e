package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ByteSize is a number of bytes written as an integer, or with a unit: KB,
// MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024), e.g. 64MiB.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	n      int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}

// String formats b with the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// UnmarshalYAML parses a size such as 1048576, 64MiB or 10MB.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(strings.TrimSpace(n.Value))
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %q is not a size in bytes (want e.g. 64MiB, 10MB or 1048576)", n.Line, n.Value)
	}
	*b = ByteSize(v)
	return nil
}

// MarshalYAML writes b as String does.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

func parseByteSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return v * mult, nil
}
