package takeover

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/controller/kube"
)

// FindCondition returns the condition of type typ, or nil.
func FindCondition(conds []monitoringv1.Condition, typ string) *monitoringv1.Condition {
	for i := range conds {
		if string(conds[i].Type) == typ {
			return &conds[i]
		}
	}
	return nil
}

// SetCondition sets c in conds as meta.SetStatusCondition does: the
// transition time stays while the status does.
func SetCondition(conds *[]monitoringv1.Condition, c monitoringv1.Condition) {
	if was := FindCondition(*conds, string(c.Type)); was != nil {
		if was.Status == c.Status {
			c.LastTransitionTime = was.LastTransitionTime
		}
		*was = c
		return
	}
	*conds = append(*conds, c)
}

// FromCondition is c as a condition of prometheus-operator's kinds for
// generation gen, with the transition time of now and the message cut as
// an Event's note is.
func FromCondition(c metav1.Condition, gen int64) monitoringv1.Condition {
	return monitoringv1.Condition{
		Type: monitoringv1.ConditionType(c.Type), Status: monitoringv1.ConditionStatus(c.Status),
		Reason: c.Reason, Message: kube.Truncate(c.Message, kube.MaxEventNote), ObservedGeneration: gen,
		LastTransitionTime: metav1.Now(),
	}
}

// Pick returns the conditions of the given types, in order.
func Pick(conds []monitoringv1.Condition, types ...string) []monitoringv1.Condition {
	var out []monitoringv1.Condition
	for _, c := range conds {
		for _, typ := range types {
			if string(c.Type) == typ {
				out = append(out, c)
			}
		}
	}
	return out
}
