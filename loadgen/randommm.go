package loadgen

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// MMBucket is one entry of --random-mm-bucket-config: an item of Height x Width pixels and
// Frames frames (1: an image, more: a video), drawn with probability Prob.
type MMBucket struct {
	Height, Width, Frames int
	Prob                  float64
}

// RandomMMConfig is the random-mm dataset's --random-mm-* flags; its text is the random
// dataset's (--random-input-len and the others).
type RandomMMConfig struct {
	BaseItems       int            // --random-mm-base-items-per-request
	ItemsRangeRatio float64        // --random-mm-num-mm-items-range-ratio, in [0, 1]
	Limits          map[string]int // --random-mm-limit-mm-per-prompt
	Buckets         []MMBucket     // --random-mm-bucket-config
}

// DefaultMMLimits and DefaultMMBuckets are vLLM's defaults (RandomMultiModalDataset).
var (
	DefaultMMLimits  = map[string]int{"image": 255, "video": 1}
	DefaultMMBuckets = []MMBucket{{256, 256, 1, 0.5}, {720, 1280, 1, 0.5}, {720, 1280, 16, 0}}
)

var bucketEntry = regexp.MustCompile(`['"]?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)['"]?\s*:\s*([-+0-9.eE]+)`)

// ParseMMBuckets reads --random-mm-bucket-config, a Python dict literal with (height, width,
// frames) keys: "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}".
func ParseMMBuckets(s string) ([]MMBucket, error) {
	body := strings.TrimSpace(s)
	if !strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "}") {
		return nil, fmt.Errorf("--random-mm-bucket-config %q: want a dict such as {(256, 256, 1): 0.5, (720, 1280, 1): 0.5}", s)
	}
	inner := strings.TrimSpace(body[1 : len(body)-1])
	var out []MMBucket
	for _, m := range bucketEntry.FindAllStringSubmatch(inner, -1) {
		h, _ := strconv.Atoi(m[1])
		w, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		p, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("--random-mm-bucket-config: probability %q: not a number", m[4])
		}
		out = append(out, MMBucket{h, w, f, p})
	}
	if rest := bucketEntry.ReplaceAllString(inner, ""); strings.Trim(rest, " ,") != "" || len(out) == 0 {
		return nil, fmt.Errorf("--random-mm-bucket-config %q: want (height, width, frames): probability entries", s)
	}
	return out, nil
}

// ParseMMLimits reads --random-mm-limit-mm-per-prompt, a JSON object: {"image": 3, "video": 0}.
func ParseMMLimits(s string) (map[string]int, error) {
	var m map[string]int
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("--random-mm-limit-mm-per-prompt %q: want a JSON object such as {\"image\": 3, \"video\": 0}", s)
	}
	return m, nil
}

// mmPlan is a checked RandomMMConfig: the buckets left (probabilities normalised), their
// modalities' limits, and the range of items per request.
type mmPlan struct {
	buckets  []MMBucket
	limits   map[string]int
	min, max int
}

func modality(b MMBucket) string {
	if b.Frames > 1 {
		return "video"
	}
	return "image"
}

// plan checks the config as vLLM does and normalises it.
func (c RandomMMConfig) plan() (mmPlan, error) {
	if c.ItemsRangeRatio < 0 || c.ItemsRangeRatio > 1 {
		return mmPlan{}, fmt.Errorf("--random-mm-num-mm-items-range-ratio must be in [0, 1], got %g", c.ItemsRangeRatio)
	}
	p := mmPlan{limits: map[string]int{}}
	total := 0.0
	for _, b := range c.Buckets {
		switch {
		case b.Prob < 0:
			return p, fmt.Errorf("--random-mm-bucket-config: probabilities must not be negative")
		case b.Frames < 1:
			return p, fmt.Errorf("--random-mm-bucket-config: (%d, %d, %d): frames must be at least 1", b.Height, b.Width, b.Frames)
		case b.Prob == 0:
			continue
		case b.Frames > 1:
			return p, fmt.Errorf("--random-mm-bucket-config: video buckets ((%d, %d, %d)) are not supported: this build sends generated images, not videos", b.Height, b.Width, b.Frames)
		case b.Height < 1 || b.Width < 1 || b.Height*b.Width > 1<<26:
			return p, fmt.Errorf("--random-mm-bucket-config: (%d, %d, 1): want 1 to 67108864 pixels", b.Height, b.Width)
		}
		if _, ok := c.Limits[modality(b)]; !ok {
			return p, fmt.Errorf("--random-mm-limit-mm-per-prompt has no limit for %s, which --random-mm-bucket-config draws", modality(b))
		}
		p.buckets, total = append(p.buckets, b), total+b.Prob
		p.limits[modality(b)] = c.Limits[modality(b)]
	}
	if len(p.buckets) == 0 {
		return p, fmt.Errorf("--random-mm-bucket-config has no bucket of positive probability")
	}
	for i := range p.buckets {
		p.buckets[i].Prob /= total
	}
	sum := 0
	for _, n := range p.limits {
		sum += n
	}
	r := c.ItemsRangeRatio
	p.max = min(sum, int(math.Ceil(float64(c.BaseItems)*(1+r))))
	p.min = max(0, int(math.Floor(float64(c.BaseItems)*(1-r))))
	if p.min > p.max {
		return p, fmt.Errorf("random-mm: fewest items per request %d exceeds the most %d (the sum of --random-mm-limit-mm-per-prompt)", p.min, p.max)
	}
	return p, nil
}

// items draws one request's items: a count in [min, max], each a bucket by probability; a
// modality at its limit is drawn no more.
func (p mmPlan) items(rng *rand.Rand) []MMBucket {
	n := p.min + rng.IntN(p.max-p.min+1)
	count := map[string]int{}
	var out []MMBucket
	for len(out) < n {
		var open []MMBucket
		total := 0.0
		for _, b := range p.buckets {
			if count[modality(b)] < p.limits[modality(b)] {
				open, total = append(open, b), total+b.Prob
			}
		}
		if len(open) == 0 {
			break
		}
		x, pick := rng.Float64()*total, open[len(open)-1]
		for _, b := range open {
			if x -= b.Prob; x < 0 {
				pick = b
				break
			}
		}
		count[modality(pick)]++
		out = append(out, pick)
	}
	return out
}

func (d *Dataset) checkRandomMM() error {
	if !d.cfg.Extra.Chat {
		return fmt.Errorf("--dataset-name random-mm sends images in chat messages: give --backend openai-chat --endpoint /v1/chat/completions")
	}
	if _, err := d.cfg.Extra.MM.plan(); err != nil {
		return err
	}
	r := d.cfg.Random
	r.IgnoreEOS = true
	_, err := NewRandom(r, EstimatedVocab())
	return err
}

// randomMM is the random dataset's text with generated images after it.
type randomMM struct {
	text *Random
	plan mmPlan
	seed int64
}

func (d *Dataset) randomMM(v *Vocab) (Workload, error) {
	r := d.cfg.Random
	r.IgnoreEOS, r.Seed = true, d.cfg.Seed
	text, err := NewRandom(r, v)
	if err != nil {
		return nil, err
	}
	plan, err := d.cfg.Extra.MM.plan()
	return &randomMM{text: text, plan: plan, seed: d.cfg.Seed}, err
}

func (m *randomMM) Name() string {
	var sizes []string
	for _, b := range m.plan.buckets {
		sizes = append(sizes, fmt.Sprintf("%dx%d %.2f", b.Width, b.Height, b.Prob))
	}
	sort.Strings(sizes)
	return fmt.Sprintf("random-mm %s, %d-%d images of %s", strings.TrimPrefix(m.text.Name(), "random "), m.plan.min, m.plan.max, strings.Join(sizes, ", "))
}

// Prompt is the random dataset's i-th prompt with its images as image_url parts (PNG data
// URLs); the prompt's token count is the text's, as vLLM counts it.
func (m *randomMM) Prompt(i int) Prompt {
	p := m.text.Prompt(i)
	rng := rand.New(rand.NewPCG(uint64(m.seed)^0x1a6e, uint64(i)+1))
	for _, b := range m.plan.items(rng) {
		p.Parts = append(p.Parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": imageURL(b.Width, b.Height)}})
	}
	return p
}

var imageCache sync.Map // "WxH" -> data URL

// imageURL is a PNG of w x h pixels as a data URL. The server's cost of an image follows its
// size in pixels; a banded picture keeps the request small where vLLM's random pixels make
// it megabytes.
func imageURL(w, h int) string {
	key := fmt.Sprintf("%dx%d", w, h)
	if u, ok := imageCache.Load(key); ok {
		return u.(string)
	}
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.RGBA{40, 90, 160, 255}, color.RGBA{230, 180, 60, 255}})
	for y := range h {
		for x := range w {
			img.SetColorIndex(x, y, uint8((x/16+y/16)%2))
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory cannot fail
	u := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	imageCache.Store(key, u)
	return u
}
