#!/bin/sh
# Compiles old.zi, new.zi and moved.zi into old.zip, new.zip and moved.zip with zic (Debian's
# libc-bin), zone files named as in Go's zoneinfo.zip.
set -eu
cd "$(dirname "$0")"
for r in old new moved; do
	dir=$(mktemp -d)
	zic -b slim -d "$dir" $r.zi
	(cd "$dir" && rm -f $r.zip && python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    z.write("America/Mexico_City")' "$OLDPWD/$r.zip")
	rm -rf "$dir"
done
