package rulefiles

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// Writes orders the writes of the rule ConfigMaps desired, given the
// live ones, so that no file one of them holds disappears from the pods in
// between, wherever it moves (from the 512 KiB shards of an older version,
// or when their number changes). It returns the ConfigMaps to write in
// phases, each written once the one before is: first those that give no
// file to another; then those that do, each with the files it gives to
// another of them kept (an interim version: a file is then in two
// ConfigMaps for a moment, never in none), or as desired when it gives
// files only to those of the first phase; then those with an interim
// version, as desired. Every ConfigMap then holds at least its desired
// files before any gives a file away to it: the writes of a phase may go
// in any order, or at once. Among the hashed ConfigMaps (packShards) one
// that gives files away never gets any from another that does, so interim
// versions are only written on the upgrade from the older layout, whose
// shards could swap files, and for the large files, each in a ConfigMap of
// its own in name order, when one is added or removed before others.
func Writes(live, desired []*corev1.ConfigMap) [][]*corev1.ConfigMap {
	liveByName := make(map[string]*corev1.ConfigMap, len(live))
	for _, cm := range live {
		liveByName[cm.Name] = cm
	}
	// wanted is where each file goes.
	wanted := map[string]string{}
	for _, cm := range desired {
		for key := range cm.BinaryData {
			wanted[key] = cm.Name
		}
	}
	// gives lists, by ConfigMap, the files it holds that go to another.
	gives := map[string][]string{}
	for _, cm := range desired {
		if l := liveByName[cm.Name]; l != nil {
			for key := range l.BinaryData {
				if to, ok := wanted[key]; ok && to != cm.Name {
					gives[cm.Name] = append(gives[cm.Name], key)
				}
			}
		}
	}
	var first, interim, last []*corev1.ConfigMap
	for _, cm := range desired {
		keys, ok := gives[cm.Name]
		if !ok {
			first = append(first, cm)
			continue
		}
		var kept map[string][]byte
		for _, key := range keys {
			if _, receiverGives := gives[wanted[key]]; receiverGives {
				if kept == nil {
					kept = maps.Clone(cm.BinaryData)
				}
				kept[key] = liveByName[cm.Name].BinaryData[key]
			}
		}
		if kept == nil {
			// It gives files only to ConfigMaps of the first phase.
			interim = append(interim, cm)
			continue
		}
		i := cm.DeepCopy()
		i.BinaryData = kept
		interim, last = append(interim, i), append(last, cm)
	}
	var phases [][]*corev1.ConfigMap
	for _, p := range [][]*corev1.ConfigMap{first, interim, last} {
		if len(p) > 0 {
			phases = append(phases, p)
		}
	}
	return phases
}
