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
