# Commands people and models run, one entry per block; blocks are separated by "#---" lines.
git status
#---
git status --short
#---
git diff HEAD~1 -- src/app.py | head -50
#---
git log --oneline -20
#---
git log --pretty=format:'%h %an %s' --since="2 weeks ago"
#---
git add -A && git commit -m "Fix the parser"
#---
git checkout -b feature/x && git push -u origin feature/x
#---
git stash && git pull --rebase && git stash pop
#---
git rev-parse --show-toplevel
#---
git branch -a | grep -v HEAD
#---
git show HEAD:README.md | head -20
#---
git blame -L 10,20 src/app.py
#---
git ls-files | wc -l
#---
git diff --stat main...HEAD
#---
ls -la
#---
ls -lh data/ | sort -k5 -h
#---
ls *.csv 2>/dev/null | head
#---
find . -name "*.py" -not -path "./.venv/*" | head -20
#---
find . -type f -name '*.ipynb' -mtime -1
#---
find . -name "__pycache__" -type d -prune -exec rm -rf {} +
#---
find src -name '*.py' | xargs wc -l | sort -n | tail -5
#---
grep -rn "TODO" --include="*.py" .
#---
grep -c "error" logs/app.log
#---
grep -E '^(import|from) ' src/*.py | sort | uniq -c | sort -rn
#---
rg -n "def main" src/
#---
cat README.md
#---
head -n 20 data/sales.csv
#---
tail -f logs/app.log | grep --line-buffered ERROR
#---
wc -l data/*.csv
#---
cut -d, -f1,3 data/sales.csv | sort | uniq -c | sort -rn | head
#---
awk -F, '{sum += $3} END {print sum}' data/sales.csv
#---
awk 'NR > 1 && $3 > 100 {print $1}' data.txt
#---
sed -n '1,10p' src/app.py
#---
sed 's/foo/bar/g' input.txt > output.txt
#---
sed -i.bak 's/old_name/new_name/g' src/*.py
#---
sort -u names.txt | wc -l
#---
echo "hello world"
#---
echo $HOME
#---
echo "Path is: ${PATH}"
#---
echo "${VAR:-default}"
#---
echo hello-$((40+2)) && echo second
#---
echo $((3 * 4 + 1))
#---
x=5; echo $((x + 1))
#---
printf '%s\n' "a" "b" "c"
#---
printf "%-10s %5d\n" name 42
#---
pwd && ls
#---
cd src && python -m pytest -q
#---
python -m pytest tests/ -x -q
#---
python -m pytest tests/test_app.py::test_main -v 2>&1 | tail -30
#---
pytest -k "not slow" --maxfail=1
#---
python -c "import pandas; print(pandas.__version__)"
#---
python3 -c 'import sys; print(sys.version)'
#---
python script.py --input data.csv --output out.csv
#---
python - <<'EOF'
import json
print(json.dumps({"a": 1}))
EOF
#---
python3 <<EOF
print("hello")
EOF
#---
cat > config.yaml <<'EOF'
name: test
value: 42
EOF
#---
cat <<EOF > notes.txt
Written on $(date)
EOF
#---
cat <<-EOF
	indented
	EOF
#---
cat << 'END' | grep x
x one
y two
END
#---
pip install -r requirements.txt
#---
pip install "pandas>=2.0" numpy
#---
pip list | grep -i torch
#---
pip show requests
#---
uv pip install -e .
#---
npm install && npm run build
#---
npm test -- --watch=false
#---
yarn lint
#---
make -j4 && make test
#---
docker ps -a
#---
docker run --rm -v "$PWD:/work" -w /work python:3.12 python -V
#---
docker compose up -d
#---
curl -s https://api.github.com/repos/python/cpython | jq '.stargazers_count'
#---
curl -sSL -o data.zip "https://example.com/data.zip" && unzip -o data.zip -d data/
#---
wget -q -O - https://example.com | head
#---
tar -xzf archive.tar.gz -C /tmp/extract
#---
tar czf backup.tar.gz src/ tests/
#---
mkdir -p build/output && cp -r src/* build/output/
#---
mv old.txt new.txt
#---
rm -rf build/ dist/ *.egg-info
#---
touch src/__init__.py
#---
chmod +x scripts/run.sh && ./scripts/run.sh
#---
ln -s ../data data
#---
du -sh * | sort -h
#---
df -h .
#---
ps aux | grep python | grep -v grep
#---
kill -9 $(pgrep -f "jupyter-lab")
#---
which python && python --version
#---
command -v node || echo "node missing"
#---
type -a python3
#---
env | grep -i proxy
#---
export PYTHONPATH=src && python -m app
#---
PYTHONPATH=src python -m app.main
#---
FOO=bar BAZ=qux ./run.sh
#---
source .venv/bin/activate && python -V
#---
. ./env.sh; echo $MY_VAR
#---
for f in *.csv; do echo "$f"; wc -l "$f"; done
#---
for i in 1 2 3; do
  echo "run $i"
done
#---
for i in $(seq 1 5); do echo $i; done
#---
for ((i = 0; i < 3; i++)); do echo $i; done
#---
while read -r line; do echo "$line"; done < input.txt
#---
while true; do sleep 1; done
#---
until curl -sf localhost:8000/health; do sleep 1; done
#---
if [ -f requirements.txt ]; then pip install -r requirements.txt; fi
#---
if [[ -d .git ]]; then echo repo; else echo none; fi
#---
[ -d build ] || mkdir build
#---
test -e out.txt && rm out.txt
#---
case "$1" in
  start) echo starting ;;
  stop) echo stopping ;;
  *) echo usage ;;
esac
#---
(cd frontend && npm ci)
#---
{ echo a; echo b; } > out.txt
#---
(echo one; echo two) | sort
#---
diff <(sort a.txt) <(sort b.txt)
#---
comm -12 <(sort a.txt) <(sort b.txt)
#---
tee output.log < input.txt
#---
python train.py 2>&1 | tee train.log
#---
python app.py > out.log 2>&1 &
#---
nohup python server.py > server.log 2>&1 &
#---
sleep 2 && curl localhost:8000
#---
timeout 10 python slow.py
#---
time python benchmark.py
#---
echo 'single $quoted'
#---
echo "double \"escaped\" quotes"
#---
echo $'tab\there'
#---
echo "multi
line string"
#---
echo a\ b
#---
ls "my folder/"
#---
grep -r 'pattern with spaces' "src dir/"
#---
echo ~/projects
#---
echo {a,b,c}.txt
#---
echo file{1..5}.txt
#---
ls -d */
#---
arr=(one two three); echo "${arr[1]}"
#---
echo "${#PATH}"
#---
name="world"; echo "hello ${name^^}"
#---
f=path/to/file.txt; echo "${f##*/}" "${f%.*}"
#---
result=$(python -c 'print(2+2)'); echo "$result"
#---
echo `date +%Y`
#---
echo "Today is $(date +%A) and user is $(whoami)"
#---
files=$(ls | wc -l) && echo $files
#---
jq '.items[] | select(.active) | .name' data.json
#---
jq -r '.[] | "\(.id)\t\(.name)"' users.json
#---
python -m json.tool < data.json
#---
sqlite3 db.sqlite "SELECT count(*) FROM users;"
#---
psql -c "\dt"
#---
ssh user@host 'ls -la /var/log'
#---
scp file.txt user@host:/tmp/
#---
rsync -avz --exclude '.git' src/ backup/
#---
git log --format='%H' | head -1 | xargs git show --stat
#---
git diff --name-only | grep '\.py$' | xargs ruff check
#---
ruff check . --fix && ruff format .
#---
mypy src/ --ignore-missing-imports
#---
black --check . || black .
#---
jupyter nbconvert --to notebook --execute analysis.ipynb --output executed.ipynb
#---
jupyter lab --no-browser --port 8888 &
#---
jupyter kernelspec list
#---
conda activate myenv && python -V
#---
conda env list
#---
nvidia-smi
#---
free -h && nproc
#---
uname -a
#---
date +"%Y-%m-%d %H:%M:%S"
#---
seq 1 10 | paste -sd+ | bc
#---
echo "scale=2; 10/3" | bc
#---
base64 -d <<< "aGVsbG8="
#---
cat <<< "here string"
#---
md5sum data/*.csv > checksums.txt
#---
sha256sum -c checksums.txt
#---
zip -r archive.zip src/ -x "*.pyc"
#---
unzip -l archive.zip
#---
gzip -k data.csv
#---
zcat data.csv.gz | head
#---
head -c 1000 /dev/urandom | base64 | head -3
#---
yes | head -5
#---
watch -n 1 nvidia-smi
#---
history | tail
#---
alias ll='ls -la'; ll
#---
function greet() { echo "hi $1"; }; greet bob
#---
greet() { echo "hi"; }
#---
set -euo pipefail; python run.py
#---
trap 'echo done' EXIT; sleep 1
#---
exec 3>&1; echo hi >&3
#---
echo error >&2
#---
ls nonexistent 2>/dev/null || true
#---
command 2>&1 >/dev/null | grep -v warning
#---
cat file.txt | while read line; do echo "> $line"; done
#---
ls | xargs -I{} echo "file: {}"
#---
find . -name '*.log' -print0 | xargs -0 rm -f
#---
parallel echo ::: a b c
#---
echo "a,b,c" | tr ',' '\n'
#---
echo "Hello" | tr '[:lower:]' '[:upper:]'
#---
awk '{ print length($0) }' file.txt | sort -n | tail -1
#---
awk 'BEGIN { FS=":" } { print $1 }' /etc/passwd
#---
sed -E 's/([0-9]+)/<\1>/g' numbers.txt
#---
sed -n '/start/,/end/p' file.txt
#---
sed '/^#/d; /^$/d' config.ini
#---
perl -pe 's/\r$//' windows.txt > unix.txt
#---
column -t -s, data.csv | less -S
#---
sort -t, -k2 -n data.csv | head
#---
sort data.txt | uniq -d
#---
cut -f2 -d: /etc/passwd | sort -u
#---
stat -c '%s %n' *.csv
#---
file data.bin
#---
readlink -f ./link
#---
realpath ../other
#---
basename "$PWD"
#---
dirname /a/b/c.txt
#---
ls -1 | wc -l
#---
git log -p -- src/app.py | grep '^+' | head
#---
git for-each-ref --sort=-committerdate refs/heads/ --format='%(refname:short)'
#---
git config --get remote.origin.url
#---
git remote -v
#---
git tag -l 'v1.*'
#---
git clean -n -d
#---
git reset --hard HEAD~1
#---
gh pr list --state open
#---
gh issue view 42 --json title,body
#---
echo "done" ; exit 0
#---
python -m http.server 8000 --directory build &
#---
open http://localhost:8000
#---
lsof -i :8000
#---
netstat -tlnp 2>/dev/null | grep 8888
#---
export $(grep -v '^#' .env | xargs)
#---
read -p "Continue? " yn
#---
select opt in a b; do echo $opt; break; done
#---
declare -A map=([a]=1 [b]=2); echo "${map[a]}"
#---
let "x = 5 + 3"; echo $x
#---
(( count++ ))
#---
[[ "$name" =~ ^[a-z]+$ ]] && echo ok
#---
echo "unterminated
#---
if true; then echo yes
#---
echo hi |
#---
cat <<EOF
missing end
#---
ls )
#---
for x in; do; done
#---
echo "$(echo "nested $(echo "deep")")"
#---
diff -u a.py b.py | patch -p0 --dry-run
#---
python -m venv .venv && . .venv/bin/activate && pip install -U pip
#---
cargo build --release 2>&1 | tail
#---
go test ./... -run TestParse -v
#---
node -e "console.log(process.version)"
#---
npx prettier --check "src/**/*.ts"
#---
ls -la | awk '{print $9}' | grep -v '^\.' | head
