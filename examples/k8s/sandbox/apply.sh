#!/bin/sh
# Hands the components a kubeconfig for the cluster at $CLUSTER_SERVER, with the bearer token
# $CLUSTER_TOKEN, as the sandbox's `kubeconfig` output.
set -eu
kubeconfig="{\"apiVersion\": \"v1\", \"kind\": \"Config\",
 \"clusters\": [{\"name\": \"target\", \"cluster\": {\"server\": \"$CLUSTER_SERVER\", \"insecure-skip-tls-verify\": true}}],
 \"users\": [{\"name\": \"ferry\", \"user\": {\"token\": \"$CLUSTER_TOKEN\"}}],
 \"contexts\": [{\"name\": \"target\", \"context\": {\"cluster\": \"target\", \"user\": \"ferry\"}}],
 \"current-context\": \"target\"}"
# The outputs file is a JSON object: the kubeconfig goes in as one string (quotes escaped, lines joined).
escaped=$(printf '%s' "$kubeconfig" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n' ' ')
printf '{"kubeconfig": "%s"}\n' "$escaped" > "$FERRY_OUTPUTS"
# It holds the cluster token: stored and used, never shown (installs get, the dashboard).
echo kubeconfig > "$FERRY_SENSITIVE_OUTPUTS"
echo "sandbox: components deploy into $CLUSTER_SERVER"
