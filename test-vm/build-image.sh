#!/bin/bash
# Builds, once and cached, the image the test VMs boot (test-vm/run.ts calls it; so can you):
#   vmlinuz      Debian's linux-image-amd64 kernel (apt-get download + dpkg-deb -x: never installed on the host)
#   initrd.img   busybox + the modules that reach the root disk (virtio-pci, virtio-blk, ext4)
#   rootfs.ext4  debootstrap --variant=minbase bookworm + test-vm/provision/packages.txt + the kernel's modules
#                + the host's Node 20 binary (provision/node.sh) + provision/system.sh + image/vm-init
# The project is not in the image: the runner shares it at boot (9p), so a code change never rebuilds it.
# Cache: $NODENET_VM_CACHE (default /var/cache/nodenet-test-vm)/<key>/, the key a hash of every input (this
# script, image/*, the image's provision/ files, the kernel package's version, the node binary; test-vm/run.ts
# passes its own, NODENET_VM_KEY, from qemu.ts imageKey over the same inputs). Prints the image directory last;
# with --print-key, only the key.
# Env: NODENET_NODE_BINARY (default: the node on PATH), NODENET_VM_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${NODENET_VM_CACHE:-/var/cache/nodenet-test-vm}"
mirror="${NODENET_VM_MIRROR:-http://deb.debian.org/debian}"
node_bin="$(readlink -f "${NODENET_NODE_BINARY:-$(command -v node)}")"
export DEBIAN_FRONTEND=noninteractive
log() { echo "build-image: $*" >&2; }

for t in debootstrap mkfs.ext4 cpio busybox dpkg-deb apt-get flock sha256sum; do
  command -v "$t" >/dev/null || { log "missing $t (apt-get install -y debootstrap e2fsprogs cpio busybox-static)"; exit 1; }
done
# The kernel: the package linux-image-amd64 depends on (e.g. linux-image-6.1.0-57-amd64) and its version.
kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1)"
[ -n "$kpkg" ] || { log "cannot resolve linux-image-amd64 (apt-get update?)"; exit 1; }
kver_pkg="$(apt-cache show "$kpkg" | sed -n 's/^Version: //p' | head -n1)"
kver="${kpkg#linux-image-}"
# The key as qemu.ts imageKey makes it (qemu.test.ts checks they agree), so a build started before npm ci (.ci/run
# does, when there is no tsx yet to run test-vm/run.ts) is the one the runner finds.
image_key() {
  local f
  printf 'kernel %s %s\nmirror %s\nnode %s\n' "$kpkg" "$kver_pkg" "$mirror" "$(sha256sum "$node_bin" | cut -d' ' -f1)"
  for f in $( (cd "$here" && printf '%s\n' build-image.sh image/* provision/node.sh provision/packages.sh provision/packages.txt provision/system.sh) | LC_ALL=C sort); do
    printf 'file %s %s\n' "$f" "$(stat -c %s "$here/$f")"
    cat "$here/$f"
  done
}
key="${NODENET_VM_KEY:-$(image_key | sha256sum | cut -c1-16)}"
if [ "${1:-}" = "--print-key" ]; then echo "$key"; exit 0; fi
out="$cache/$key"
mkdir -p "$cache" "$cache/debs"
exec 9>"$cache/.lock"
flock 9
if [ -f "$out/ready" ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
# Leftovers of a build that died (we hold the lock, so no build is running).
rm -rf "$cache"/*.tmp
tmp="$out.tmp"
mkdir -p "$tmp"
start=$(date +%s)
log "building $key: $kpkg ($kver_pkg), node $("$node_bin" -v), into $tmp"

# 1. The kernel package, extracted.
mkdir -p "$tmp/kpkg"
(cd "$tmp/kpkg" && apt-get download -q "$kpkg=$kver_pkg" 2>/dev/null >/dev/null || apt-get download "$kpkg=$kver_pkg")
dpkg-deb -x "$tmp"/kpkg/*.deb "$tmp/kpkg/x"
cp "$tmp/kpkg/x/boot/vmlinuz-$kver" "$tmp/vmlinuz"
log "kernel extracted ($(( $(date +%s) - start )) s)"

# 2. The root filesystem.
pkgs="$(grep -v '^\s*#' "$here/provision/packages.txt" | sed '/^\s*$/d' | paste -sd, -)"
root="$tmp/rootfs"
debootstrap --variant=minbase --include="$pkgs" --cache-dir="$cache/debs" bookworm "$root" "$mirror" > "$tmp/debootstrap.log" 2>&1 \
  || { tail -n 30 "$tmp/debootstrap.log" >&2; exit 1; }
log "debootstrap done ($(( $(date +%s) - start )) s)"
# The same provisioning the Vagrantfile runs: packages (all present: debootstrap --include), node, modules/sysctls.
cp -r "$here/provision" "$root/tmp/provision"
chroot "$root" bash /tmp/provision/packages.sh >&2
NODENET_PROVISION_ROOT="$root" NODENET_NODE_BINARY="$node_bin" bash "$here/provision/node.sh" >&2
NODENET_PROVISION_ROOT="$root" NODENET_PROVISION_CHROOT=1 bash "$here/provision/system.sh" >&2
rm -rf "$root/tmp/provision"
# The kernel's modules, minus hardware a VM never has.
mkdir -p "$root/lib/modules"
cp -a "$tmp/kpkg/x/lib/modules/$kver" "$root/lib/modules/"
for d in drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet drivers/infiniband drivers/staging \
         drivers/usb drivers/bluetooth drivers/scsi drivers/iio drivers/hid drivers/input drivers/isdn drivers/mtd \
         drivers/hwmon drivers/edac sound net/wireless net/mac80211 net/bluetooth; do
  rm -rf "$root/lib/modules/$kver/kernel/$d"
done
chroot "$root" depmod -a "$kver"
install -m 0755 "$here/image/vm-init" "$root/usr/local/sbin/nodenet-vm-init"
# systemd, for the suites booted with it (nodenet.init=systemd): vm-init as a service, and nothing a test VM has
# no use for (logins, timers: each costs seconds of an emulated boot), nor bird2's own BIRD (the bgp backend
# starts its own, one per agent, with its own socket).
install -m 0644 "$here/image/nodenet-vm.service" "$root/etc/systemd/system/nodenet-vm.service"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/nodenet-vm.service "$root/etc/systemd/system/multi-user.target.wants/nodenet-vm.service"
for u in getty@.service serial-getty@.service console-getty.service getty-static.service systemd-logind.service apt-daily.timer \
         apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer systemd-timesyncd.service \
         systemd-update-utmp.service systemd-update-utmp-runlevel.service bird.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$u"
done
echo nodenet-vm > "$root/etc/hostname"
printf '127.0.0.1 localhost\n' > "$root/etc/hosts"
: > "$root/etc/resolv.conf"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale
chroot "$root" node -v >/dev/null
mb=$(( $(du -sm "$root" | cut -f1) + 400 ))
mkfs.ext4 -q -F -L nodenet-root -d "$root" "$tmp/rootfs.ext4" "${mb}M"
log "rootfs.ext4 ${mb} MiB ($(( $(date +%s) - start )) s)"

# 3. The initramfs: busybox and the modules for the root disk, in load order.
ird="$tmp/initrd"
mkdir -p "$ird/bin" "$ird/modules" "$ird/proc" "$ird/sys" "$ird/dev"
cp "$(command -v busybox)" "$ird/bin/busybox"
install -m 0755 "$here/image/initrd-init" "$ird/init"
: > "$ird/modules.order"
for ko in $(for m in virtio_pci virtio_blk ext4; do chroot "$root" modprobe -S "$kver" --show-depends "$m"; done | awk '$1 == "insmod" { print $2 }'); do
  b="$(basename "$ko")"
  grep -qx "$b" "$ird/modules.order" && continue
  cp "$root$ko" "$ird/modules/$b"
  echo "$b" >> "$ird/modules.order"
done
(cd "$ird" && find . | cpio -o -H newc --quiet) > "$tmp/initrd.img"

cat > "$tmp/manifest.json" <<JSON
{"key": "$key", "kernel": "$kpkg", "kernelPackageVersion": "$kver_pkg", "kernelRelease": "$kver", "node": "$("$node_bin" -v)", "buildSeconds": $(( $(date +%s) - start ))}
JSON
rm -rf "$root" "$ird" "$tmp/kpkg"
touch "$tmp/ready"
mv "$tmp" "$out"
# Older images (other keys) are left for concurrent runs of other checkouts; remove them by hand when needed.
log "built $out in $(( $(date +%s) - start )) s"
echo "$out"
