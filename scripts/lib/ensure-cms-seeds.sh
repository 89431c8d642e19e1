# Sourced by scripts/build, dev, bench and deploy: the cms worker imports dist/cms-seeds.js (its bundled
# fallback seeds, docs/cms.md), so the file must exist and be a module. An empty or broken one (a
# redirect that failed half-way, a dist/ built before the file existed) becomes the empty module: no
# seeds; a real one (`scripts/provision --cms-seeds tokens.json --out dist/cms-seeds.js`) is kept.
ensure_cms_seeds() {
  local file="${1:-dist/cms-seeds.js}"
  if [[ ! -s "$file" ]] || ! grep -q '^export default ' "$file"; then
    mkdir -p "$(dirname "$file")"
    printf 'export default "";\n' > "$file"
  fi
}
