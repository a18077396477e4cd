/*
Copyright 2026 The bindgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package explain

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// maxNodeNames is how many node names a grouped reason lists.
const maxNodeNames = 5

// WriteText prints the report for people; now is the time ages are
// counted from.
func (r *Report) WriteText(out io.Writer, now time.Time) error {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Pod %s/%s: %s\n", r.Namespace, r.Name, r.State)
	if len(r.Policies) > 0 {
		p("\nPolicies:\n")
		for _, v := range r.Policies {
			mark := " "
			if v.Takes {
				mark = "*"
			}
			p("  %s %s\tpriority %d\t%s\n", mark, v.Name, v.Priority, v.Reason)
		}
	}
	if n := r.Nodes; n != nil {
		p("\nNodes: %d/%d take the pod under BindingPolicy %s\n", n.Feasible, n.Total, r.Policy)
		for _, c := range n.Reasons {
			names := c.Nodes
			more := ""
			if len(names) > maxNodeNames {
				more = fmt.Sprintf(" and %d more", len(names)-maxNodeNames)
				names = names[:maxNodeNames]
			}
			p("  %d\t%s\t%s\t(%s%s)\n", c.Count, c.Plugin, c.Reason, strings.Join(names, ", "), more)
		}
		if len(n.Refused) > 0 {
			p("\n  Every refused node:\n")
			for _, v := range n.Refused {
				p("  %s\t%s\t%s\n", v.Node, v.Plugin, v.Reason)
			}
		}
		if len(n.Top) > 0 {
			p("\nTop scores:\n")
			for _, s := range n.Top {
				var parts []string
				for _, ps := range s.Plugins {
					if ps.Score != 0 {
						parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", ps.Plugin, ps.Score, ps.Percent))
					}
				}
				p("  %s\t%d\t%s\n", s.Node, s.Total, strings.Join(parts, ", "))
			}
		}
	}
	if res := r.Reservation; res != nil {
		durable := "durable (recorded in the policy's status)"
		if !res.Durable {
			durable = "in the operator's memory only"
		}
		p("\nReservation: node %s under BindingPolicy %s since %s (%s ago), %s\n",
			res.Node, res.Policy, res.Since.UTC().Format(time.RFC3339), age(now, res.Since), durable)
		if res.PermitDeadline != nil {
			p("  permit deadline %s (in %s)\n", res.PermitDeadline.UTC().Format(time.RFC3339), age(*res.PermitDeadline, now))
		}
	}
	if len(r.Permit) > 0 {
		p("\nPermit conditions:\n")
		for _, c := range r.Permit {
			p("  %s\t%s\t%s\t%s\n", c.Name, c.Kind, c.Verdict, c.Message)
		}
	}
	if len(r.Timeline) > 0 {
		p("\nTimeline:\n")
		for _, e := range r.Timeline {
			count := ""
			if e.Count > 1 {
				count = fmt.Sprintf(" (x%d)", e.Count)
			}
			p("  %s\t%s\t%s\t%s%s\n", e.Time.UTC().Format("15:04:05"), e.Type, e.Reason, oneLine(e.Message), count)
		}
	}
	for _, n := range r.Notes {
		p("\nNote: %s\n", n)
	}
	return flushTrimmed(w, &buf, out)
}

// flushTrimmed flushes the tabwriter into buf and copies buf to out
// without the padding tabwriter leaves at the end of lines.
func flushTrimmed(w *tabwriter.Writer, buf *bytes.Buffer, out io.Writer) error {
	if err := w.Flush(); err != nil {
		return err
	}
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n"))
	return err
}

// age is b-a rounded for reading ("0s" when negative).
func age(a, b time.Time) time.Duration {
	d := a.Sub(b).Round(time.Second)
	if d < 0 {
		return 0
	}
	return d
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// WriteText prints the simulation for people.
func (sim *Simulation) WriteText(out io.Writer) error {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	what := "not applied"
	if sim.Replaces {
		what = "an edit of the applied policy"
	}
	p("BindingPolicy %s (%s; nothing is written): %d pending pod(s) it selects\n", sim.Policy, what, len(sim.Pods))
	if len(sim.Pods) > 0 {
		p("\nPOD\tNOW\tOUTCOME\tNODE\tREASON\n")
		for _, o := range sim.Pods {
			now := o.Now
			if now == "" {
				now = "-"
			}
			reason := oneLine(o.Reason)
			if o.DependsOnOrder {
				reason += " (fits alone: depends on the order pods are taken)"
			}
			if n := len(o.TiedWith); n > 0 {
				tie := fmt.Sprintf("or %s with the same score", strings.Join(o.TiedWith[:min(n, 2)], ", "))
				if n > 2 {
					tie = fmt.Sprintf("or %s and %d more with the same score", strings.Join(o.TiedWith[:2], ", "), n-2)
				}
				reason = strings.TrimSpace(reason + " (" + tie + ")")
			}
			p("%s/%s\t%s\t%s\t%s\t%s\n", o.Namespace, o.Name, now, o.Outcome, o.Node, reason)
		}
	}
	var parts []string
	for _, k := range []string{OutcomeBind, OutcomeWait, OutcomeRefuse, OutcomeUnschedulable, OutcomeNotTaken} {
		if n := sim.Summary[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) > 0 {
		p("\nSummary: %s\n", strings.Join(parts, ", "))
	}
	for _, o := range sim.Pods {
		if o.DependsOnOrder {
			p("\nNote: pods marked \"depends on the order\" compete for the same room with pods simulated before them; the operator takes pods it wakes together (for example when a policy is applied) in no fixed order, so it may place one of them instead.\n")
			break
		}
	}
	for _, n := range sim.Notes {
		p("\nNote: %s\n", n)
	}
	return flushTrimmed(w, &buf, out)
}
