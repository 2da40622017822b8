# Helpers the CI scripts share (sourced, not run).

# The oldest and the newest Python that pyproject.toml claims; each is tested (README, "Working on nbgraph").
OLDEST_PYTHON=3.11
NEWEST_PYTHON=3.13

# python_of 3.13: the path of that Python on this machine (on PATH, or installed by pyenv).
python_of() {
    local version=$1 found
    if found=$(command -v "python$version" 2>/dev/null) && "$found" -c '' 2>/dev/null; then
        echo "$found"
        return
    fi
    if command -v pyenv >/dev/null 2>&1; then
        for found in "$(pyenv root)"/versions/"$version".*/bin/python"$version"; do
            if [ -x "$found" ]; then
                echo "$found"
                return
            fi
        done
    fi
    echo "Python $version is not on this machine (nor installed by pyenv): it is needed to test the range pyproject.toml claims" >&2
    return 1
}

# quietly LOG COMMAND...: run COMMAND with its output in LOG, shown only if it fails.
quietly() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 || { local status=$?; cat "$log" >&2; return "$status"; }
}

# seconds_since START: whole seconds since START (from $SECONDS).
seconds_since() { echo $((SECONDS - $1)); }
