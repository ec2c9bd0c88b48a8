package prometheus

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// ruleWrites orders the writes of the rule ConfigMaps desired, given the
// live ones, so that no file one of them holds disappears from the pods in
// between, wherever it moves (from prometheus-operator-sized shards of an
// older version, or when their number changes). It returns the
// ConfigMaps to write, in order: first those that lose no file another
// one gets; then, for those that do, each with the files it gives to
// another of them kept (an interim version: a file is then in two
// ConfigMaps for a moment, never in none), and each as desired. With the
// hashed layout (packShards) a ConfigMap that gives files away never gets
// any from another that does, so the interim versions are only written on
// the upgrade from the older layout, whose shards could swap files.
func ruleWrites(live, desired []*corev1.ConfigMap) []*corev1.ConfigMap {
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
		last = append(last, cm)
		var kept map[string][]byte
		for _, key := range keys {
			if _, receiverGives := gives[wanted[key]]; receiverGives {
				if kept == nil {
					kept = maps.Clone(cm.BinaryData)
				}
				kept[key] = liveByName[cm.Name].BinaryData[key]
			}
		}
		if kept != nil {
			i := cm.DeepCopy()
			i.BinaryData = kept
			interim = append(interim, i)
		}
	}
	out := append(first, interim...)
	return append(out, last...)
}
