#!/bin/sh
# Compiles old.zi and new.zi into old.zip and new.zip with zic (Debian's
# libc-bin), zone files named as in Go's zoneinfo.zip.
set -eu
cd "$(dirname "$0")"
for r in old new; do
	dir=$(mktemp -d)
	zic -b slim -d "$dir" $r.zi
	(cd "$dir" && rm -f $r.zip && python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    z.write("America/Mexico_City")' "$OLDPWD/$r.zip")
	rm -rf "$dir"
done
