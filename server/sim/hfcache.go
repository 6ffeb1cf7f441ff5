package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// hfRepoID is a Hugging Face model id as the cache stores it: "org/name", no path tricks.
var hfRepoID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$`)

var hexCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// FindHFConfig is the config.json of model on this machine, or "": a directory model (as
// `vllm serve /path/to/model` takes) with a config.json, else the snapshot of the local
// Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub or
// ~/.cache/huggingface/hub) that refs/main names, else its newest snapshot. Nothing is
// downloaded (docs/catalogue.md#hugging-face-cache).
func FindHFConfig(model string, getenv func(string) string) string {
	if model == "" {
		return ""
	}
	if p := filepath.Join(model, "config.json"); isFile(p) {
		return p
	}
	if !hfRepoID.MatchString(model) || strings.Contains(model, "..") {
		return ""
	}
	repo := "models--" + strings.ReplaceAll(model, "/", "--")
	for _, hub := range hfHubDirs(getenv) {
		if p := snapshotConfig(filepath.Join(hub, repo)); p != "" {
			return p
		}
	}
	return ""
}

func hfHubDirs(getenv func(string) string) []string {
	var dirs []string
	add := func(base string, parts ...string) {
		if base != "" {
			dirs = append(dirs, filepath.Join(append([]string{base}, parts...)...))
		}
	}
	add(getenv("HF_HUB_CACHE"))
	add(getenv("HUGGINGFACE_HUB_CACHE"))
	add(getenv("HF_HOME"), "hub")
	add(getenv("XDG_CACHE_HOME"), "huggingface", "hub")
	add(getenv("HOME"), ".cache", "huggingface", "hub")
	return dirs
}

// snapshotConfig is repoDir/snapshots/<refs/main>/config.json, or the newest snapshot's.
func snapshotConfig(repoDir string) string {
	if ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err == nil {
		if c := strings.TrimSpace(string(ref)); hexCommit.MatchString(c) {
			if p := filepath.Join(repoDir, "snapshots", c, "config.json"); isFile(p) {
				return p
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(repoDir, "snapshots"))
	if err != nil {
		return ""
	}
	best, bestTime := "", int64(0)
	for _, e := range entries {
		p := filepath.Join(repoDir, "snapshots", e.Name(), "config.json")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.ModTime().UnixNano() > bestTime {
			best, bestTime = p, st.ModTime().UnixNano()
		}
	}
	return best
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
