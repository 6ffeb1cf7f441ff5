package tui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/themes"
)

// probePanel is a view only the tests have: one key, a command that answers, and a count of
// what reached it.
type probePanel struct {
	c             *common
	w, h          int
	poke          key.Binding
	pokes, echoes int
	cache         string
}

// probeEcho is what the probe's command answers.
type probeEcho struct{}

func newProbePanel(c *common) panel {
	return &probePanel{c: c, poke: binding([]string{"o"}, "o", "poke the probe")}
}

func (p *probePanel) ShortHelp() []key.Binding  { return []key.Binding{p.poke} }
func (p *probePanel) FullHelp() [][]key.Binding { return [][]key.Binding{{p.poke}} }
func (p *probePanel) SetSize(w, h int)          { p.w, p.h = w, h }
func (p *probePanel) View() string              { return p.cache }

func (p *probePanel) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if key.Matches(msg, p.poke) {
			p.pokes++
			cmd = tea.Batch(func() tea.Msg { return probeEcho{} }, func() tea.Msg { return probeEcho{} })
		}
	case probeEcho:
		p.echoes++
	}
	p.cache = fit("the probe view", p.w, p.h)
	return cmd
}

// withProbeTab adds the probe view to the tab table, as a new view's one line would, for
// the rest of the test.
func withProbeTab(t *testing.T) {
	old := tabs
	tabs = append(slices.Clone(tabs), tab{"Probe", newProbePanel, false})
	t.Cleanup(func() { tabs = old })
}

// A view is its file and one line in the tab table: the line alone puts it in the tab line,
// the key map, the help, the footer and tab's round, in fleet mode too.
func TestAViewIsOneLineInTheTabTable(t *testing.T) {
	withProbeTab(t)
	d := newDriver(t, 120, 40)
	k := string(rune('0' + len(tabs)))
	assert.Equal(t, k, d.m.viewKey("Probe"), "the next number shows it")
	assert.Contains(t, d.m.tabLine(), k+" Probe", "the tab line names it with its key")
	last := d.m.keys.Views[len(d.m.keys.Views)-1].Help()
	assert.Equal(t, [2]string{k, "Probe"}, [2]string{last.Key, last.Desc}, "the key map has its key")

	d.press(k)
	require.Equal(t, "Probe", d.activeView())
	p := panelOf[*probePanel](d)
	out := d.view()
	assert.Contains(t, out, "the probe view")
	assert.Contains(t, out[strings.LastIndex(out, "\n")+1:], "o poke the probe", "the footer shows its key")
	d.press("?")
	help := d.view()
	assert.Contains(t, help, "1-"+k+" ", "the help counts it among the views")
	assert.Contains(t, help, "probe", "the help has a block of its keys")
	assert.Contains(t, help, "poke the probe")
	d.press("esc")

	cmd := d.press("o")
	require.Equal(t, 1, p.pokes, "its key reaches it")
	d.showView(overviewTab)
	batch, ok := cmd().(tea.BatchMsg)
	require.True(t, ok, "a batch stays a batch for the program to run")
	for _, c := range batch {
		d.send(c())
	}
	assert.Equal(t, 2, p.echoes, "what its command answers comes back to it, though another view is shown")
	d.press("shift+tab")
	assert.Equal(t, "Probe", d.activeView(), "shift+tab from the first view goes round to it")

	f, _ := fleetDriver(t, 120, 40, 3)
	fk := string(rune('0' + len(f.m.tabs)))
	assert.Contains(t, f.m.tabLine(), fk+" Probe", "a fleet shows it too: it is not of the dashboard's own load")
	f.press("?")
	assert.Contains(t, f.view(), "1-"+fk+" ", "the help counts the fleet's views, not the table's")
}

// A message for a view goes to that view by name, whichever view is active: the log lines
// reach the Log view while the Overview is shown, and a fleet's rows its Fleet view while
// a drill-down shows another.
func TestMessagesGoToTheirViewByName(t *testing.T) {
	withProbeTab(t)
	d := newDriver(t, 120, 40)
	d.showView("Probe")
	d.logs("INFO a line for the log")
	d.showView(logTab)
	assert.Contains(t, d.view(), "a line for the log")
	p := panelOf[*probePanel](d)
	d.send(panelMsg{to: "Probe", msg: probeEcho{}})
	d.send(panelMsg{to: "no such view", msg: probeEcho{}})
	assert.Equal(t, 1, p.echoes, "a message reaches the view it names, and no other")
	assert.Nil(t, d.send(probeEcho{}), "a message for no one is dropped")
	assert.Equal(t, 1, p.echoes)
}

// Every view has its golden files at every size and style, and no golden file is left of a
// view, a style or a size the test no longer draws: go test ./tui -update writes them all.
func TestEveryGoldenFileIsAView(t *testing.T) {
	want := map[string]bool{}
	for _, style := range append(themes.Names(), "NO_COLOR") {
		for _, sz := range goldenSizes {
			for _, tb := range tabs {
				want[filepath.Join("testdata", "TestGoldenViews", style, sizeName(sz), tb.name+".golden")] = true
			}
		}
	}
	got := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("testdata", "TestGoldenViews"), func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			got[path] = true
		}
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
