//go:build tools

// Package tools pins helm for the chart's e2e tests.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
