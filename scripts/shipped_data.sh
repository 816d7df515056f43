#!/usr/bin/env bash
# The shipped selection tables (cache/shipped/gemm_selection_<gpu>.tsv) from bench/data/MANIFEST:
#   scripts/shipped_data.sh fit GPU      refit GPU's table from the committed sweeps the manifest
#                                        lists (its order, roles and options) and write it
#   scripts/shipped_data.sh check GPU    refit into a temporary folder and compare with the
#                                        committed table byte for byte: exit 0 when equal, 1 with
#                                        a summary of the differences when not
#   scripts/shipped_data.sh sweep GPU [--run] [SWEEP...]
#                                        print the gemm_sweep commands that measure GPU's table
#                                        sweeps again (or the SWEEPs named); --run runs them, on a
#                                        GPU of that model only
#   scripts/shipped_data.sh validate     check the manifest: every file it names exists, every
#                                        committed sweep is named once, roles, dates and order hold
# GPU is a `table` line's name in the manifest (h100, h200). Exit 2: a usage error, naming the
# argument. Why: a table is a function of its sweeps, their order and a few options; with those in
# one file, it can be rebuilt and checked on any CPU.
# The fit takes 1-2 minutes a GPU on 2 cores (H100: 1.7M rows; unpacked sweeps up to 400 MB in
# $TMPDIR). Rebuild libtuned after `fit`: the tables and their kernels are built into it.
# Environment: FIT_SELECTION, a fit_selection binary (default: built in BUILD_DIR, default
# build-fit/, without precompiled kernels, tests or benchmarks); for `sweep`: GEMM_SWEEP (default
# build/bench/gemm_sweep), OUT (where sweeps go, default .), DB_DIR (the autotune databases that
# `db:` candidates name, default .).
set -euo pipefail
cd "$(dirname "$0")/.."
manifest=bench/data/MANIFEST
sweeps_dir=bench/data/sweeps
candidates_dir=bench/data/sweep_candidates

usage() {
  echo "shipped_data: $1" >&2
  echo "usage: scripts/shipped_data.sh fit GPU | check GPU | sweep GPU [--run] [SWEEP...] | validate" >&2
  exit 2
}
fail() {
  echo "shipped_data: $*" >&2
  exit 1
}

# The manifest's records, tab-separated, each with its line number: "table" GPU TABLE WRITTEN
# OPTIONS, or ROLE SWEEP CANDIDATES PROBLEMS PURPOSE (ROLE e.g. "append 2026-12-06 07:07 +4"),
# each sweep after its section's GPU: LINE GPU FIELDS...
records() {
  awk -F' [|] ' '
    /^[ \t]*(#|$)/ { next }
    {
      for (i = 1; i <= NF; i++) gsub(/^[ \t]+|[ \t]+$/, "", $i)
      if ($1 == "table") gpu = $2
      out = NR "\t" gpu
      for (i = 1; i <= NF; i++) out = out "\t" $i
      print out
    }' "$manifest"
}

gpus() { records | awk -F'\t' '$3 == "table" { printf "%s%s", sep, $4; sep = " " }'; }

# The file tag of a GPU model name on stdin ("NVIDIA H100 80GB HBM3" -> nvidia-h100), as
# scripts/lease.sh makes it.
model_tag() { tr 'A-Z' 'a-z' | awk '{for (i = 2; i <= NF; i++) if ($i ~ /[0-9]/) {print $1 "-" $i; exit}}'; }

# The tag of the GPU a sweep's first line names ("# gemm_sweep on NVIDIA H100 80GB HBM3 (sm_90,
# 132 SMs)" -> nvidia-h100).
sweep_tag() {
  local first
  first=$(zcat -f "$1" | head -n 1 || true)  # zcat ends on SIGPIPE
  sed -n 's/^# [^ ]* on \(.*\) (.*$/\1/p' <<< "$first" | model_tag
}

epoch_of() { date -u -d "$1 UTC" +%s 2>/dev/null; }

# validate: every complaint on stderr, exit 1 if any.
validate() {
  local errors=0 line gpu kind f3 f4 f5 f6 extra tag="" seen_append=0 fits=0
  declare -A named=() tables=()
  complain() { echo "shipped_data: $manifest:$line: $*" >&2; errors=$((errors + 1)); }
  [ -f "$manifest" ] || fail "$manifest is missing"
  while IFS=$'\t' read -r line gpu kind f3 f4 f5 f6 extra; do
    if [ "$kind" = table ]; then
      [ -z "$tag" ] || [ "$fits" -gt 0 ] || complain "the section before has no fit sweep"
      fits=0 seen_append=0
      [ -n "$f6" ] && [ -z "$extra" ] || { complain "a table line has 5 fields: table | GPU | TABLE | WRITTEN | OPTIONS"; continue; }
      [[ "$f3" =~ ^[a-z0-9-]+$ ]] || complain "GPU '$f3' is not a plain name"
      [ -z "${tables[$f3]:-}" ] || complain "GPU $f3 has a second section"
      tables[$f3]=1
      tag=${f4#gemm_selection_}
      tag=${tag%.tsv}
      [[ "$f4" == gemm_selection_*.tsv ]] || complain "table '$f4' is not named gemm_selection_<tag>.tsv"
      [ -f "cache/shipped/$f4" ] || complain "cache/shipped/$f4 does not exist"
      epoch_of "$f5" > /dev/null || complain "WRITTEN '$f5' is not a date (YYYY-MM-DD HH:MM, UTC)"
      [[ " $f6 " != *" --out "* && " $f6 " != *" --append-to "* ]] || complain "OPTIONS name no --out or --append-to (the script does)"
      continue
    fi
    [ -n "$gpu" ] || { complain "a sweep before any table line"; continue; }
    [ -n "$f6" ] && [ -z "$extra" ] || { complain "a sweep line has 5 fields: ROLE | SWEEP | CANDIDATES | PROBLEMS | PURPOSE"; continue; }
    read -r -a role <<< "$kind"
    case "${role[0]}" in
      fit)
        [ ${#role[@]} -eq 1 ] || complain "role '$kind': fit takes nothing more"
        [ "$seen_append" -eq 0 ] || complain "a fit sweep after an appended one: the fit comes first"
        fits=$((fits + 1)) ;;
      append)
        seen_append=1
        [ ${#role[@]} -eq 3 ] || [ ${#role[@]} -eq 4 ] || complain "role '$kind': append WRITTEN [+N]"
        epoch_of "${role[1]:-} ${role[2]:-}" > /dev/null || complain "role '$kind': '${role[1]:-} ${role[2]:-}' is not a date"
        [ ${#role[@]} -eq 3 ] || [[ "${role[3]}" =~ ^\+[1-9][0-9]*$ ]] || complain "role '$kind': +N, entries to add, is a whole number above 0" ;;
      unused) [ ${#role[@]} -eq 1 ] || complain "role '$kind': unused takes nothing more" ;;
      *) complain "role '$kind' is none of fit, append, unused" ;;
    esac
    [ -z "${named[$f3]:-}" ] || complain "$f3 is named twice (first on line ${named[$f3]})"
    named[$f3]=$line
    if [ ! -f "$sweeps_dir/$f3" ]; then
      complain "$sweeps_dir/$f3 does not exist"
    else
      [[ "$f3" == "gemm_sweep_${tag}_"*.tsv.gz ]] || complain "$f3 is not named gemm_sweep_${tag}_<what it holds>.tsv.gz"
      local measured_on
      measured_on=$(sweep_tag "$sweeps_dir/$f3")
      [ "$measured_on" = "$tag" ] || complain "$f3 was measured on '${measured_on:-?}', not $tag"
    fi
    local c
    for c in $f4; do
      case "$c" in
        -|portfolio) ;;
        db:*) [[ "$c" =~ ^db:[A-Za-z0-9_-]+:[1-9][0-9]*$ ]] || complain "candidates '$c': db:NAME:N" ;;
        *) [ -f "$candidates_dir/${c%%:*}" ] || complain "candidates $candidates_dir/${c%%:*} do not exist"
           [[ "$c" != *:* || "${c#*:}" == PACK=1 ]] || complain "candidates '$c': the only filter is :PACK=1" ;;
      esac
    done
    [[ "$f5" == --* ]] || complain "PROBLEMS '$f5' are gemm_sweep options"
  done < <(records)
  [ -n "$tag" ] || { echo "shipped_data: $manifest has no table line" >&2; errors=$((errors + 1)); }
  [ "$fits" -gt 0 ] || { echo "shipped_data: $manifest: the last section has no fit sweep" >&2; errors=$((errors + 1)); }
  local f
  for f in "$sweeps_dir"/*; do
    [ -n "${named[$(basename "$f")]:-}" ] ||
      { echo "shipped_data: $f is not in $manifest (name it, as unused if no table reads it)" >&2; errors=$((errors + 1)); }
  done
  [ "$errors" -eq 0 ] || fail "$manifest: $errors problem(s)"
}

# section GPU: the GPU's table line (TABLE WRITTEN OPTIONS in $table $written $options) and its
# sweeps, each "ROLE<TAB>SWEEP<TAB>CANDIDATES<TAB>PROBLEMS<TAB>PURPOSE", in $section_sweeps.
section() {
  local found=0 line gpu kind rest
  section_sweeps=()
  while IFS=$'\t' read -r line gpu kind rest; do
    [ "$gpu" = "$1" ] || continue
    if [ "$kind" = table ]; then
      IFS=$'\t' read -r _ table written options <<< "$rest"
      found=1
    else
      section_sweeps+=("$kind"$'\t'"$rest")
    fi
  done < <(records)
  [ "$found" -eq 1 ] || usage "GPU '$1' is not in $manifest (it has: $(gpus))"
}

fit_binary() {
  if [ -n "${FIT_SELECTION:-}" ]; then
    [ -x "$FIT_SELECTION" ] || fail "FIT_SELECTION=$FIT_SELECTION is not an executable"
    fit=$(realpath "$FIT_SELECTION")
    return
  fi
  local build=${BUILD_DIR:-build-fit}
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTUNED_PRECOMPILE=OFF \
      -DTUNED_BUILD_TESTS=OFF -DTUNED_BUILD_BENCH=OFF > /dev/null
  fi
  cmake --build "$build" --target fit_selection -j"$(nproc)" > "$build/shipped_data_build.log" 2>&1 ||
    { tail -n 30 "$build/shipped_data_build.log" >&2; fail "fit_selection did not build (in $build)"; }
  fit=$(realpath "$build/bench/fit_selection")
}

# fit_into GPU DIR LOG: the GPU's table fitted in DIR (DIR/TABLE), fit_selection's messages to LOG.
# The sweeps are unpacked into DIR and read from there, so the table's header names them without
# a folder, and the header's dates are the manifest's: the same sweeps give the same bytes.
fit_into() {
  local dir=$2 log=$3 entry role sweep plain=() add
  section "$1"
  fit_binary
  # fit_selection's recursion at 1.5M rows outgrows an 8 MB stack.
  ulimit -s unlimited 2>/dev/null || ulimit -s 1048576 2>/dev/null || true
  read -r -a fit_options <<< "$options"
  for entry in "${section_sweeps[@]}"; do
    IFS=$'\t' read -r role sweep _ <<< "$entry"
    [ "$role" = fit ] || continue
    plain+=("${sweep%.gz}")
    zcat "$sweeps_dir/$sweep" > "$dir/${plain[-1]}"
  done
  echo "shipped_data: fitting $table from ${#plain[@]} sweeps" >&2
  (cd "$dir" && SOURCE_DATE_EPOCH=$(epoch_of "$written") "$fit" "${plain[@]}" "${fit_options[@]}" \
    --out "$table") >> "$log" 2>&1 || { tail -n 20 "$log" >&2; fail "fit_selection failed on $1's sweeps"; }
  (cd "$dir" && rm -f "${plain[@]}")
  for entry in "${section_sweeps[@]}"; do
    IFS=$'\t' read -r role sweep _ <<< "$entry"
    read -r -a role <<< "$role"
    [ "${role[0]}" = append ] || continue
    add=()
    [ -z "${role[3]:-}" ] || add=(--add-entries "${role[3]#+}")
    zcat "$sweeps_dir/$sweep" > "$dir/${sweep%.gz}"
    echo "shipped_data: appending ${sweep%.gz}" >&2
    (cd "$dir" && SOURCE_DATE_EPOCH=$(epoch_of "${role[1]} ${role[2]}") "$fit" "${sweep%.gz}" \
      "${add[@]}" --append-to "$table" --out "$table") >> "$log" 2>&1 ||
      { tail -n 20 "$log" >&2; fail "fit_selection --append-to failed on $sweep"; }
    rm -f "$dir/${sweep%.gz}"
  done
}

# How two tables differ, in a few lines: header (comment) lines and body lines apart.
differences() {
  local new=$1 old=$2 header body
  header=$(diff <(grep '^#' "$new") <(grep '^#' "$old") | grep -c '^[<>]' || true)
  body=$(diff <(grep -v '^#' "$new") <(grep -v '^#' "$old") | grep -c '^[<>]' || true)
  echo "  header (comment) lines differing: $header; body lines differing: $body (refit $(wc -l < "$new") lines, committed $(wc -l < "$old"))"
  echo "  first differences (< refit, > committed):"
  diff "$new" "$old" | grep '^[<>]' | head -n 8 | cut -c1-160 | sed 's/^/    /' || true  # SIGPIPE
}

# The gemm_sweep options of a sweep's CANDIDATES field.
candidate_options() {
  local c files=() filters=() out=() name top
  for c in $1; do
    case "$c" in
      -) ;;
      portfolio) out+=(--portfolio) ;;
      db:*) IFS=: read -r _ name top <<< "$c"
            out+=(--candidates-from-db "${DB_DIR:-.}/$name.db" --top "$top") ;;
      *:PACK=1) files+=("$candidates_dir/${c%%:*}"); filters+=(PACK=1) ;;
      *) files+=("$candidates_dir/$c") ;;
    esac
  done
  if [ ${#files[@]} -eq 1 ] && [ ${#filters[@]} -eq 0 ]; then
    out+=(--candidates "${files[0]}")
  elif [ ${#filters[@]} -gt 0 ]; then
    out+=(--candidates "<(grep -h PACK=1 ${files[*]})")
  elif [ ${#files[@]} -gt 1 ]; then
    out+=(--candidates "<(cat ${files[*]})")
  fi
  echo "${out[*]}"
}

sweep_commands() {
  local gpu=$1 run=$2 entry role sweep candidates problems purpose command ran=0 skipped=0
  shift 2
  section "$gpu"
  local tag=${table#gemm_selection_}
  tag=${tag%.tsv}
  local binary=${GEMM_SWEEP:-build/bench/gemm_sweep} out=${OUT:-.}
  if [ "$run" = 1 ]; then
    local here
    here=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | model_tag || true)
    [ -n "$here" ] || fail "sweep --run: no GPU here (nvidia-smi found none)"
    [ "$here" = "$tag" ] || fail "sweep --run: this GPU is $here; $gpu's sweeps are measured on $tag"
    [ -x "$binary" ] || fail "sweep --run: $binary is not built (GEMM_SWEEP names another)"
  fi
  local name known
  for name in "$@"; do
    known=0
    for entry in "${section_sweeps[@]}"; do
      IFS=$'\t' read -r _ sweep _ <<< "$entry"
      [ "$sweep" != "$name" ] || known=1
    done
    [ "$known" = 1 ] || usage "sweep: SWEEP '$name' is not one of $gpu's in $manifest"
  done
  echo "# $gpu: the sweeps of cache/shipped/$table, in the manifest's order (--portfolio times"
  echo "# today's portfolio, not the one of the time; db: candidates need autotune's databases)."
  for entry in "${section_sweeps[@]}"; do
    IFS=$'\t' read -r role sweep candidates problems purpose <<< "$entry"
    if [ $# -gt 0 ]; then
      [[ " $* " == *" $sweep "* ]] || continue
    else
      [ "$role" != unused ] || continue
    fi
    command="$binary $problems $(candidate_options "$candidates")"
    command="${command% } --resume --out $out/${sweep%.gz}"
    command="$command && gzip -f $out/${sweep%.gz}"
    echo "# $sweep ($role): $purpose"
    echo "$command"
    [ "$run" = 1 ] || continue
    if [[ " $candidates " == *" db:"* ]]; then
      local c n missing=""
      for c in $candidates; do
        [[ "$c" != db:* ]] || { IFS=: read -r _ n _ <<< "$c"; [ -f "${DB_DIR:-.}/$n.db" ] || missing="${DB_DIR:-.}/$n.db"; }
      done
      if [ -n "$missing" ]; then
        echo "# skipped: $missing is missing" >&2
        skipped=$((skipped + 1))
        continue
      fi
    fi
    bash -c "$command" || fail "sweep: $sweep failed"
    ran=$((ran + 1))
  done
  [ "$run" = 0 ] || echo "shipped_data: $ran sweeps measured into $out, $skipped skipped" >&2
}

[ $# -ge 1 ] || usage "a command is missing"
command=$1
shift
case "$command" in
  validate)
    [ $# -eq 0 ] || usage "validate takes no argument ('$1')"
    validate
    echo "shipped_data: $manifest names every committed sweep; files, roles and dates hold" ;;
  fit|check)
    [ $# -ge 1 ] || usage "$command: GPU is missing (one of: $(gpus))"
    [ $# -eq 1 ] || usage "$command takes one GPU ('$2' is more)"
    gpu=$1
    section "$gpu"
    validate
    work=$(mktemp -d "${TMPDIR:-/tmp}/shipped_data.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    start=$(date +%s)
    fit_into "$gpu" "$work" "$work/fit_selection.log"
    if [ "$command" = fit ]; then
      cp "$work/$table" "cache/shipped/$table"
      echo "shipped_data: wrote cache/shipped/$table in $(( $(date +%s) - start )) s; rebuild libtuned to ship it"
    elif cmp -s "$work/$table" "cache/shipped/$table"; then
      echo "shipped_data: check $gpu: cache/shipped/$table is byte for byte what $manifest fits ($(( $(date +%s) - start )) s)"
    else
      echo "shipped_data: check $gpu: cache/shipped/$table differs from what $manifest fits:" >&2
      differences "$work/$table" "cache/shipped/$table" >&2
      exit 1
    fi ;;
  sweep)
    [ $# -ge 1 ] || usage "sweep: GPU is missing (one of: $(gpus))"
    gpu=$1
    shift
    run=0
    names=()
    for arg in "$@"; do
      case "$arg" in
        --run) run=1 ;;
        -*) usage "sweep: unknown option '$arg'" ;;
        *) names+=("$arg") ;;
      esac
    done
    sweep_commands "$gpu" "$run" "${names[@]}" ;;
  *) usage "unknown command '$command'" ;;
esac
