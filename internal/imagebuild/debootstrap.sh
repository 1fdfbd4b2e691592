#!/usr/bin/env bash
# Builds the codebridge sandbox image from Debian packages, for machines that
# cannot pull from a container registry. Needs root (debootstrap) and podman
# or docker.
#
#   debootstrap.sh IMAGE [EXTRA_DEBIAN_PACKAGES]
#
# It is embedded in the codebridge binary: run it as `codebridge image build`,
# which passes the image name (imagebuild.DefaultTag unless --tag is given).
set -euo pipefail

image=${1:?usage: debootstrap.sh IMAGE [EXTRA_DEBIAN_PACKAGES]}
extra=${2:-}
engine=${CODEBRIDGE_BUILD_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman; else engine=docker; fi
fi
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

rootfs=$(mktemp -d /tmp/codebridge-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

include=python3${extra:+,$extra}
echo "build-image: debootstrap bookworm ($include) into $rootfs" >&2
debootstrap --variant=minbase --include="$include" bookworm "$rootfs" "$mirror" >&2

# Trim what a sandbox never needs.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
       "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

# mktemp made the directory 0700; it becomes the image's / and must let the
# unprivileged sandbox user in (rootless engines enforce it).
chmod 755 "$rootfs"

echo "build-image: importing as $image with $engine" >&2
tar -C "$rootfs" -c . | "$engine" import \
  --change 'CMD ["python3"]' --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >&2
echo "$image"
