#!/bin/bash
# Installs Node 20 as /usr/local/bin/node. Debian 12's nodejs is 18, too old for nodenet.
#   NODENET_NODE_BINARY=/path/to/node  copy that binary (the qemu image: the host's own process.execPath)
#   otherwise                          download the official tarball from nodejs.org (Vagrant, a user's machine)
# NODENET_PROVISION_ROOT prefixes the destination (the image build writes into its chroot).
set -euo pipefail
root="${NODENET_PROVISION_ROOT:-}"
version="${NODENET_NODE_VERSION:-20.20.2}"
mkdir -p "$root/usr/local/bin"
if [ -n "${NODENET_NODE_BINARY:-}" ]; then
  install -m 0755 "$NODENET_NODE_BINARY" "$root/usr/local/bin/node"
  echo "provision/node: copied $NODENET_NODE_BINARY"
  exit 0
fi
if [ -x "$root/usr/local/bin/node" ] && "$root/usr/local/bin/node" -v | grep -q '^v20\.'; then
  echo "provision/node: $("$root/usr/local/bin/node" -v) already installed"
  exit 0
fi
command -v curl >/dev/null || { apt-get update -qq; apt-get install -y -qq curl xz-utils; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
url="https://nodejs.org/dist/v$version/node-v$version-linux-x64.tar.xz"
curl -fsSL "$url" -o "$tmp/node.tar.xz"
curl -fsSL "https://nodejs.org/dist/v$version/SHASUMS256.txt" | grep " node-v$version-linux-x64.tar.xz\$" | sed "s#node-v.*#$tmp/node.tar.xz#" | sha256sum -c -
tar -xJf "$tmp/node.tar.xz" -C "$tmp"
install -m 0755 "$tmp/node-v$version-linux-x64/bin/node" "$root/usr/local/bin/node"
cp -a "$tmp/node-v$version-linux-x64/lib/node_modules" "$root/usr/local/lib/" 2>/dev/null || true
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
echo "provision/node: installed $("$root/usr/local/bin/node" -v) from nodejs.org"
