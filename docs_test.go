package retry_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SECURITY.md names the test that checks each promise: each name it gives
// must be a test of this module, or the document has drifted from the code.
func TestSecurityDocNamesRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("SECURITY.md")
	require.NoError(t, err)
	names := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, names)

	var sources strings.Builder
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && fileExists(filepath.Join(path, "go.mod")) {
			return filepath.SkipDir // another module
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	for _, m := range names {
		assert.Contains(t, sources.String(), "func "+m[1]+"(", "SECURITY.md names %s, which no test of this module defines", m[1])
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// docFiles are the documents a reader follows: the front page, the guides,
// and the pages beside them.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md", "BENCHMARKS.md", "CHANGELOG.md"}
	guides, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, guides, "the guides live in docs/*.md")
	files = append(files, guides...)
	nested, err := filepath.Glob("*/README.md")
	require.NoError(t, err)
	deeper, err := filepath.Glob("*/*/README.md")
	require.NoError(t, err)
	return append(append(files, nested...), deeper...)
}

// Every test the docs name (`TestX`, `FuzzX`, `BenchmarkX`, `ExampleX`)
// must be defined by a test file of one of the repository's modules, or the
// document has drifted from the code.
func TestDocsNameRealTests(t *testing.T) {
	t.Parallel()
	var sources strings.Builder
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	name := regexp.MustCompile("`((?:Test|Fuzz|Benchmark|Example)[A-Z_][A-Za-z0-9_]*)`")
	for _, doc := range docFiles(t) {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			assert.Contains(t, sources.String(), "func "+m[1]+"(", "%s names %s, which no test of the repository defines", doc, m[1])
		}
	}
}

// Every relative link of the docs (to a file, a folder, or a heading) must
// lead somewhere. Links to other sites are not fetched.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	for _, doc := range docFiles(t) {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		text := stripCode(string(b))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if !assert.True(t, fileExists(path), "%s links to %s: no such file", doc, target) {
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") {
				page, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Contains(t, headingAnchors(string(page)), anchor, "%s links to %s: no such heading in %s", doc, target, path)
			}
		}
	}
}

// stripCode drops fenced code blocks, whose brackets are Go, not links.
func stripCode(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	for _, line := range strings.Split(stripCode(md), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}
