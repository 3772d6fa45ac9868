#!/bin/bash
# Installs the Debian packages of packages.txt that are missing. Shared by the qemu image build (run in the
# debootstrap chroot, where debootstrap --include already put them: then it only checks) and the Vagrantfile.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# No process substitution: the image build runs this in a chroot without /dev/fd.
want=($(grep -v '^\s*#' "$here/packages.txt" | sed '/^\s*$/d'))
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "provision/packages: all ${#want[@]} packages present"
  exit 0
fi
echo "provision/packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
