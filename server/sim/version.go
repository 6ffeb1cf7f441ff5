package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a vLLM release number such as 0.25.1 or 0.10.1.1. The simulator takes the
// behaviour that changed between releases (metric families, cache_config_info labels, the
// "GPU KV cache size" formula) from the version it imitates.
type Version [4]int

// DefaultVersion is the newest release the simulator's references describe.
const DefaultVersion = "0.33.0"

// Oldest and newest releases the simulator models.
var (
	oldestVersion = Version{0, 2, 0, 0} // before 0.10 for the memory plan only: metrics and logs are 0.10's
	newestVersion = Version{0, 33, 99, 99}
)

// ParseVersion reads "0.25.1", "0.10.1.1" or "v0.26.0"; a suffix after the numbers
// ("0.26.0rc1", "0.26.0+cu129") is ignored.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexFunc(t, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		t = t[:i]
	}
	parts := strings.Split(strings.TrimSuffix(t, "."), ".")
	var v Version
	if len(parts) < 2 || len(parts) > 4 {
		return v, fmt.Errorf("invalid vLLM version %q (want a release number such as 0.25.1)", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 9999 {
			return v, fmt.Errorf("invalid vLLM version %q (want a release number such as 0.25.1)", s)
		}
		v[i] = n
	}
	return v, nil
}

// MustVersion is ParseVersion for constants.
func MustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Less reports whether v is an older release than w.
func (v Version) Less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// AtLeast reports whether v is the release s or a newer one.
func (v Version) AtLeast(s string) bool { return !v.Less(MustVersion(s)) }

// NewestMinor is the newest release line the simulator models, as "0.33".
func NewestMinor() string { return fmt.Sprintf("%d.%d", newestVersion[0], newestVersion[1]) }

// String renders the version as vLLM prints it: three numbers, a fourth when it is set.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	if v[3] != 0 {
		s += "." + strconv.Itoa(v[3])
	}
	return s
}
