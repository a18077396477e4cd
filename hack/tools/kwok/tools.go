//go:build tools

// Package tools pins kwok, which plays the kubelets in the playground.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
