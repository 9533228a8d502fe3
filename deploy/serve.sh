#!/bin/sh
# One tiebreak dashboard process with the production profile, for the reverse proxy in deploy/nginx/.
#
#   deploy/serve.sh [PORT]
#
# reads deploy/production.env (or the file named by $TIEBREAK_PROFILE); a variable already set in the
# environment wins over the file, PORT wins over both. Several processes = one per port, each listed in the
# nginx upstream block: `deploy/serve.sh 8501 & deploy/serve.sh 8502 &`. Guide: docs/hosting.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
profile=${TIEBREAK_PROFILE:-$here/production.env}
[ -r "$profile" ] || { echo "deploy/serve.sh: cannot read the profile $profile" >&2; exit 2; }

while IFS= read -r line || [ -n "$line" ]; do
  case $line in ''|'#'*) continue ;; esac
  key=${line%%=*}
  case $key in
    *[!A-Z0-9_]*|[0-9]*|'') echo "deploy/serve.sh: $profile: not KEY=value: $line" >&2; exit 2 ;;
  esac
  eval "already=\${$key+set}"
  [ "$already" = set ] || export "$key=${line#*=}"
done < "$profile"
if [ $# -ge 1 ]; then
  case $1 in *[!0-9]*|'') echo "deploy/serve.sh: PORT must be a number, got '$1'" >&2; exit 2 ;; esac
  export STREAMLIT_SERVER_PORT="$1"
fi

data=${TIEBREAK_DATA:-$root/data}
[ -d "$data" ] || { echo "deploy/serve.sh: the data folder $data does not exist (TIEBREAK_DATA)" >&2; exit 2; }

python=${TIEBREAK_PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
cd "$root"
exec "$python" -m streamlit run app.py
