package serve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim"
)

// loadProfiles is the built-in profiles, with --sim-profiles, and the model sized from a
// Hugging Face config.json: --sim-model-config's, or for a model the catalogue lacks the one
// in a local directory or the local Hugging Face cache (docs/catalogue.md#model-config-files).
func loadProfiles(opts *Options, getenv func(string) string) (*sim.Profiles, error) {
	p, err := sim.LoadProfiles(opts.ProfilesPath)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	path := opts.ModelConfigPath
	if fi, err := os.Stat(path); path != "" && err == nil && fi.IsDir() {
		path = filepath.Join(path, "config.json") // a model's directory, as vLLM takes it
	}
	if path == "" {
		if _, err := p.Model(opts.Engine.Model); err == nil {
			return p, nil
		}
		if path = sim.FindHFConfig(opts.Engine.Model, getenv); path == "" {
			return p, nil // Resolve reports the unknown model
		}
	} else if !opts.modelSet() {
		opts.Engine.Model = configModelName(path)
	}
	m, err := sim.LoadHFModel(opts.Engine.Model, path)
	if err != nil {
		msg := "--sim-model-config " + path + ": " + err.Error()
		if errors.Is(err, fs.ErrNotExist) && strings.Count(path, "/") == 1 && !strings.HasSuffix(path, ".json") {
			// "--sim-model Org/Name" reaches here as an abbreviation, as vLLM's parser reads one.
			msg += " (a model's name goes in --model; --sim-model-config takes a config.json)"
		}
		return nil, &ConfigError{Msg: msg}
	}
	p.Prefer(m)
	return p, nil
}

// modelSet reports whether the command line named the model (--model or the positional tag).
func (o *Options) modelSet() bool {
	for _, nv := range o.NonDefault {
		if nv.Key == "model" {
			return true
		}
	}
	return false
}

// configModelName names a model given only by its config file: the cache's "org/name" for a
// file in a Hugging Face cache snapshot, else the directory's name for a config.json and the
// file's own ("llama" for cfg/llama.json) for any other.
func configModelName(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // a bare "config.json" is named after the directory it is in
	}
	dir := filepath.Dir(filepath.Clean(path))
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	parts := strings.Split(filepath.ToSlash(dir), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if name, ok := strings.CutPrefix(parts[i], "models--"); ok && strings.Contains(name, "--") {
			return strings.Replace(name, "--", "/", 1)
		}
	}
	if stem != "config" && stem != "" {
		return stem
	}
	if b := filepath.Base(dir); b != "." && b != "/" {
		return b
	}
	return "model-config"
}
