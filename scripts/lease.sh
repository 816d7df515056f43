# Sourced by the one-lease scripts: $out (OUT or ./out, created), the GPU's $name, the file tag of
# its model ($tag: "nvidia-h100"), an empty $summary for the steps' lines, and print_summary to
# show them last.
out=${OUT:-out}
mkdir -p "$out"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
tag=$(echo "$name" | tr 'A-Z' 'a-z' | awk '{for (i = 2; i <= NF; i++) if ($i ~ /[0-9]/) {print $1 "-" $i; exit}}')
summary=()
print_summary() {
  echo
  echo "== summary on $name${1:-} =="
  printf '%s\n' "${summary[@]}"
}
