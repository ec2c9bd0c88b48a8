package takeover

import (
	"cmp"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"
)

// ImageSpec is what prometheus-operator composes a server's image from.
type ImageSpec struct {
	// Image is spec.image: when set, the image as is.
	Image *string
	// BaseImage, Tag and SHA are the deprecated spec fields;
	// DefaultBaseImage applies when BaseImage is empty.
	BaseImage, DefaultBaseImage, Tag, SHA string
	// Version is spec.version; DefaultVersion applies when it is empty.
	Version, DefaultVersion string
}

// Image is the image prometheus-operator composes from s
// (pkg/operator/image.go BuildImagePath), and the version it parses, as
// SemverTolerant returns it; ok is false when the version is not one
// (prometheus-operator fails on it, whatever the image).
func Image(s ImageSpec) (image, version string, ok bool) {
	version, ok = SemverTolerant(cmp.Or(s.Version, s.DefaultVersion))
	if strings.TrimSpace(ptr.Deref(s.Image, "")) != "" {
		return ptr.Deref(s.Image, ""), version, ok
	}
	base := cmp.Or(s.BaseImage, s.DefaultBaseImage)
	name := base[strings.LastIndexByte(base, '/')+1:]
	switch {
	case strings.ContainsAny(name, ":@"):
		return base, version, ok
	case s.SHA != "":
		return base + "@sha256:" + s.SHA, version, ok
	case s.Tag != "":
		return base + ":" + s.Tag, version, ok
	}
	return base + ":v" + version, version, ok
}

// SemverTolerant reads a version as prometheus-operator does (blang's
// semver.ParseTolerant: spaces and a leading v trimmed, leading zeros
// dropped, a missing minor or patch is 0) and returns it without the v;
// ok is false when it is not a version.
func SemverTolerant(v string) (string, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 && strings.ContainsAny(parts[len(parts)-1], "+-") {
		return v, false
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	core, suffix := parts[2], ""
	if i := strings.IndexAny(core, "+-"); i >= 0 {
		core, suffix = core[:i], core[i:]
	}
	nums := []string{parts[0], parts[1], core}
	for i, n := range nums {
		u, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return v, false
		}
		nums[i] = strconv.FormatUint(u, 10)
	}
	return strings.Join(nums, ".") + suffix, true
}

// AtLeast reports whether version, as SemverTolerant returns it, is
// major.minor or later (a pre-release of major.minor.0 is not).
func AtLeast(version string, major, minor uint64) bool {
	core, pre, _ := strings.Cut(strings.SplitN(version, "+", 2)[0], "-")
	parts := strings.SplitN(core, ".", 3)
	if len(parts) < 3 {
		return false
	}
	maj, _ := strconv.ParseUint(parts[0], 10, 64)
	mnr, _ := strconv.ParseUint(parts[1], 10, 64)
	patch, _ := strconv.ParseUint(parts[2], 10, 64)
	switch {
	case maj != major:
		return maj > major
	case mnr != minor:
		return mnr > minor
	}
	return patch > 0 || pre == ""
}
