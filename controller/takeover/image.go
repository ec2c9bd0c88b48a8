package takeover

import (
	"cmp"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/compat"
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
// compat.SemverTolerant returns it; ok is false when the version is not one
// (prometheus-operator fails on it, whatever the image).
func Image(s ImageSpec) (image, version string, ok bool) {
	version, ok = compat.SemverTolerant(cmp.Or(s.Version, s.DefaultVersion))
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

// AtLeast reports whether version, as compat.SemverTolerant returns it, is
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

// Compare orders two versions as compat.SemverTolerant returns them, as semver
// does (the numbers, then a pre-release before its release, its
// identifiers numerically or lexically); a build suffix is ignored. It
// returns -1, 0 or +1.
func Compare(a, b string) int {
	a, b = strings.SplitN(a, "+", 2)[0], strings.SplitN(b, "+", 2)[0]
	ca, pa, _ := strings.Cut(a, "-")
	cb, pb, _ := strings.Cut(b, "-")
	if c := compareFields(strings.Split(ca, "."), strings.Split(cb, ".")); c != 0 {
		return c
	}
	switch {
	case pa == pb:
		return 0
	case pa == "":
		return 1
	case pb == "":
		return -1
	}
	return compareFields(strings.Split(pa, "."), strings.Split(pb, "."))
}

// compareFields compares dot-separated identifiers: numbers numerically,
// before words, words lexically; a shorter list first when one starts
// the other.
func compareFields(a, b []string) int {
	for i := range min(len(a), len(b)) {
		na, errA := strconv.ParseUint(a[i], 10, 64)
		nb, errB := strconv.ParseUint(b[i], 10, 64)
		switch {
		case errA == nil && errB == nil:
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		default:
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}

// ImageVersion is the version an image's tag says, as SemverTolerant
// returns it (quay.io/prometheus/alertmanager:v0.34.0@sha256:… is
// 0.34.0); ok is false without a tag or when the tag is not a version.
func ImageVersion(image string) (version string, ok bool) {
	image, _, _ = strings.Cut(image, "@")
	name := image[strings.LastIndexByte(image, '/')+1:]
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return "", false
	}
	return compat.SemverTolerant(name[i+1:])
}

// NotOlder is the default version of a server whose spec sets none:
// prometheus-operator's, or the one its live image runs when that is
// newer, so that a takeover never downgrades what runs. running is the
// live container's image, "" without one.
func NotOlder(defaultVersion, running string) string {
	d, ok := compat.SemverTolerant(defaultVersion)
	if !ok {
		return defaultVersion
	}
	if r, ok := ImageVersion(running); ok && Compare(r, d) > 0 {
		return "v" + r
	}
	return defaultVersion
}
