package themes

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEveryThemeSetsEveryRole(t *testing.T) {
	colour := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	for _, n := range Names() {
		th, ok := ByName(n)
		assert.True(t, ok, n)
		for role, c := range map[string]string{"Fg": th.Fg, "FgMuted": th.FgMuted, "Accent": th.Accent, "Border": th.Border,
			"BorderFocus": th.BorderFocus, "Good": th.Good, "Warn": th.Warn, "Bad": th.Bad} {
			assert.Regexp(t, colour, c, "%s.%s", n, role)
		}
		assert.GreaterOrEqual(t, len(th.Series), 4, n)
		assert.Len(t, th.Heat, 5, n)
		assert.NotEqual(t, th.Good, th.Bad, n)
	}
	assert.Equal(t, []string{"dark", "colorblind", "high-contrast", "light"}, Names())
	assert.Equal(t, "colorblind", Next("dark").Name)
	assert.Equal(t, "dark", Next("light").Name, "cycles")
	_, ok := ByName("LIGHT")
	assert.True(t, ok)
	_, ok = ByName("neon")
	assert.False(t, ok)
}
