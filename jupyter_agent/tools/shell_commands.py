"""What known commands do with their options: the data the ``Bash`` rules judge a command by.

A prefix rule such as ``Bash(sort:*)`` must not allow ``sort -o ~/.bashrc x``: the words
after the prefix are read against the table of that command (:mod:`.shell_effects` does the
reading). Each :class:`Spec` lists, as space-separated option names:

* ``flags``: options without an argument that only read (``-n``, ``--stat``);
* ``args``: options with an argument that only read (``-k``, ``--format=``: a long option
  written with ``=`` takes an argument, which may also be the next word);
* ``writes``: options whose argument is a file the command writes (``-o``, ``--output=``);
  such a file is judged as a redirection's target is (an edit there must be allowed);
* ``runs``: options that run other code, or write where nobody can say beforehand (an
  in-place edit, a delete, a config value): a command with one asks unless a rule names it
  exactly.

An option in none of these, of a command that has any ``writes`` or ``runs``, asks too (it
may be a new or abbreviated form of one). ``any_option`` marks commands with no option that
writes or runs at all. ``operands`` says what the other words are: files read (the
default), files written (``tee``), or a command that is run (``timeout 5 CMD``). ``script``
names the command's own language whose text is judged too (a ``sed`` script's ``e`` and
``w`` commands, an ``awk`` program's ``system()``, a ``find`` expression's ``-exec``).

A command that is not in :data:`COMMANDS` is judged by the rules' words alone, as a person
wrote them, and "Always allow" never offers a prefix rule for it (only the exact command).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Operands(enum.Enum):
    """What a command's words that are not options are."""

    READ = "read"          # files or values it reads
    WRITE = "write"        # files it writes (``tee``)
    COMMAND = "command"    # the first is a command it runs (``timeout 5 CMD``)
    NONE = "none"          # none are expected: any asks (``git branch NAME`` creates a branch)
    DD = "dd"              # ``key=value`` operands (``dd``): ``of=`` is written


class Script(enum.Enum):
    """A command's own language, whose text is judged too."""

    SED = "sed"
    AWK = "awk"
    FIND = "find"


@dataclass(frozen=True, eq=False)  # one table is one command: compared (and cached) by identity
class Spec:
    """One command's options and operands (see the module docstring)."""

    flags: str = ""
    args: str = ""
    writes: str = ""
    runs: str = ""
    any_option: bool = False
    operands: Operands = Operands.READ
    #: operands skipped before the command (``timeout DURATION CMD``)
    skip_operands: int = 0
    #: ``NAME=value`` operands are settings, not the command (``env``)
    assignments: bool = False
    #: runs other code whatever its words are (``xargs``, ``eval``, ``bash``)
    always_runs: bool = False
    #: sets variables the rest of the line runs with (``export PATH=.``), and evaluates the
    #: subscript of a name it is given (``read 'a[$(cmd)]'`` runs cmd)
    sets_variables: bool = False
    #: ``-5`` is a number (``head -5``, ``git log -3``)
    numbers: bool = False
    #: the position of an operand that is written (``uniq IN OUT``)
    written_operand: int | None = None
    script: Script | None = None
    subcommands: dict[str, Spec] = field(default_factory=dict)


# -- commands that read, with no option that writes or runs ------------------------------------

_READERS = ("cat head tail wc ls pwd echo grep egrep fgrep basename dirname realpath readlink stat du "
            "df which whoami id uname true false cut tr nl rev tac paste comm join column fold fmt "
            "expand unexpand od hexdump base64 base32 md5sum sha1sum sha256sum sha512sum cksum diff cmp jq "
            "sleep seq nproc printenv groups locale tty expr numfmt")

# -- the judged ones ------------------------------------------------------------------------------

_RUNNER = "runs its operand as a command"

_GIT_DIFF_FLAGS = (
    "-p -u --patch -s --no-patch --raw --patch-with-raw -t --indent-heuristic --no-indent-heuristic "
    "--minimal --patience --histogram --stat --compact-summary --numstat --shortstat --dirstat --cumulative "
    "--summary --patch-with-stat -z --name-only --name-status --submodule --color --no-color --color-moved "
    "--no-color-moved --word-diff --color-words --no-renames --rename-empty --no-rename-empty --check "
    "--full-index --binary --abbrev -B --break-rewrites -M --find-renames -C --find-copies "
    "--find-copies-harder -D --irreversible-delete -R --relative --no-relative -a --text "
    "--ignore-cr-at-eol --ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space "
    "--ignore-blank-lines --function-context -W --exit-code --quiet --no-ext-diff --no-textconv "
    "--ignore-submodules --no-prefix --default-prefix --ita-invisible-in-index --ita-visible-in-index "
    "--cached --staged --merge-base --no-index --pickaxe-all --pickaxe-regex --minimal -0 -1 -2 -3 "
    "--base --ours --theirs --follow --unified --color-moved-ws --no-color-moved-ws")
_GIT_DIFF_ARGS = (
    "-U --unified= --stat= --stat-width= --stat-name-width= --stat-count= --stat-graph-width= --dirstat= "
    "--dirstat-by-file= --submodule= --color= --color-moved= --word-diff= --word-diff-regex= --color-words= "
    "--abbrev= --diff-algorithm= --anchored= -l -S -G --find-object= --diff-filter= --relative= -O --skip-to= "
    "--rotate-to= --inter-hunk-context= --ignore-submodules= --src-prefix= --dst-prefix= --line-prefix= "
    "--output-indicator-new= --output-indicator-old= --output-indicator-context= -I --ignore-matching-lines= "
    "--break-rewrites= --find-renames= --find-copies= --color-moved-ws= --ws-error-highlight= -M -C -B")
_GIT_LOG_FLAGS = (
    "--oneline --graph --decorate --no-decorate --source --use-mailmap --full-diff --log-size --all "
    "--branches --tags --remotes --reverse --first-parent --merges --no-merges --no-walk --do-walk "
    "--topo-order --date-order --author-date-order --left-right --cherry-pick --cherry-mark --cherry "
    "--boundary --simplify-by-decoration --full-history --dense --sparse --simplify-merges --ancestry-path "
    "--show-signature --abbrev-commit --no-abbrev-commit --relative-date --parents --children --walk-reflogs "
    "-g --regexp-ignore-case -i --extended-regexp -E --fixed-strings -F --perl-regexp -P --all-match "
    "--invert-grep --not --show-notes --no-notes --show-pulls --no-expand-tabs --expand-tabs -m -c --cc "
    "--remerge-diff --diff-merges --no-diff-merges --combined-all-paths --encoding --mailmap --no-mailmap "
    "--pretty --format --bisect --stdin --single-worktree --ignore-missing --count --exclude-first-parent-only "
    "-L --name-only -h --dd --show-linear-break --clear-decorations")
_GIT_LOG_ARGS = (
    "-n --max-count= --skip= --since= --after= --until= --before= --author= --committer= --grep= "
    "--grep-reflog= --min-parents= --max-parents= --date= --pretty= --format= --decorate= --branches= "
    "--tags= --remotes= --glob= --exclude= --encoding= --notes= --show-notes= --diff-merges= --expand-tabs= "
    "--decorate-refs= --decorate-refs-exclude= --since-as-filter= -L --show-linear-break= --ancestry-path=")
#: Options that run code a repository or the environment names (an external diff, a text
#: converter), or write where the option says.
_GIT_DIFF_RUNS = "--ext-diff --textconv"
_GIT_DIFF_WRITES = "--output="

_GIT_SUBCOMMANDS = {
    "status": Spec(
        flags="-s --short -b --branch --show-stash --long -v --verbose -u --untracked-files --ignored "
              "--no-renames --renames -z --porcelain --ahead-behind --no-ahead-behind --column --no-column "
              "--ignore-submodules --null",
        args="--porcelain= --untracked-files= --ignored= --ignore-submodules= --column= --find-renames= "
             "-u -M"),
    "diff": Spec(flags=_GIT_DIFF_FLAGS, args=_GIT_DIFF_ARGS, writes=_GIT_DIFF_WRITES, runs=_GIT_DIFF_RUNS,
                 numbers=True),
    "log": Spec(flags=f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}", args=f"{_GIT_DIFF_ARGS} {_GIT_LOG_ARGS}",
                writes=_GIT_DIFF_WRITES, runs=_GIT_DIFF_RUNS, numbers=True),
    "show": Spec(flags=f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}", args=f"{_GIT_DIFF_ARGS} {_GIT_LOG_ARGS}",
                 writes=_GIT_DIFF_WRITES, runs=_GIT_DIFF_RUNS, numbers=True),
    "blame": Spec(flags="-b --root --show-stats -l -t -s -e --show-email -f --show-name -n --show-number -p "
                        "--porcelain --line-porcelain --incremental -w -c --score-debug --minimal --progress "
                        "--no-progress -M -C",
                  args="-L --contents= --date= -S --ignore-rev= --ignore-revs-file= --since= --abbrev= "
                       "--color-lines --color-by-age", runs="--textconv"),
    "ls-files": Spec(flags="-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u "
                           "--unmerged -k --killed --directory --no-empty-directory --eol -z --deduplicate "
                           "-t -v -f --full-name --recurse-submodules --error-unmatch --debug --sparse "
                           "--exclude-standard --resolve-undo",
                     args="-x --exclude= -X --exclude-from= --exclude-per-directory= --with-tree= --abbrev= "
                          "--format="),
    "rev-parse": Spec(flags="--abbrev-ref --short --verify -q --quiet --show-toplevel --git-dir "
                            "--absolute-git-dir --git-common-dir --is-inside-work-tree --is-inside-git-dir "
                            "--is-bare-repository --show-prefix --show-cdup --symbolic --symbolic-full-name "
                            "--all --branches --tags --remotes --show-superproject-working-tree --sq "
                            "--revs-only --no-revs --flags --no-flags --default --local-env-vars --path-format",
                      args="--short= --abbrev-ref= --path-format= --git-path --resolve-git-dir --since= "
                           "--until= --default= --prefix="),
    "grep": Spec(flags="--cached --no-index --untracked --no-exclude-standard --exclude-standard "
                       "--recurse-submodules -a --text --no-textconv -i --ignore-case -I -w "
                       "--word-regexp -v --invert-match -h -H --full-name -E --extended-regexp -G "
                       "--basic-regexp -P --perl-regexp -F --fixed-strings -n --line-number --column -l "
                       "--files-with-matches --name-only -L --files-without-match -z --null -o --only-matching "
                       "-c --count --color --no-color --break --heading -p --show-function -W --function-context "
                       "--all-match -q --quiet --and --or --not -r --recursive --no-recursive",
                 args="--max-depth= -e -f -A --after-context= -B --before-context= -C --context= --threads= "
                      "-m --max-count= --color=",
                 runs="-O --open-files-in-pager --textconv"),
    "branch": Spec(flags="-a --all -r --remotes -v -vv --verbose --list -l --show-current --no-color --color "
                         "--column --no-column -i --ignore-case --merged --no-merged --contains --no-contains "
                         "--omit-empty",
                   args="--sort= --format= --color= --column= --points-at= --abbrev=",
                   operands=Operands.NONE),
}

COMMANDS: dict[str, Spec] = {
    **{name: Spec(any_option=True) for name in _READERS.split()},
    "sort": Spec(flags="-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g --general-numeric-sort "
                       "-i --ignore-nonprinting -M --month-sort -h --human-numeric-sort -n --numeric-sort -R "
                       "--random-sort -r --reverse -V --version-sort -c -C --check -m --merge -s --stable -u "
                       "--unique -z --zero-terminated --debug",
                 args="-k --key= -t --field-separator= -S --buffer-size= --parallel= --sort= --check= "
                      "--random-source= --files0-from=",
                 writes="-o --output=",
                 # a program it runs; a folder it writes temporary files into
                 runs="--compress-program= -T --temporary-directory="),
    # `test -v 'a[$(cmd)]'` evaluates the subscript of the name it is given: it runs cmd
    **{name: Spec(any_option=True, runs="-v") for name in ("test", "[")},
    # `printf -v PATH .` sets a variable the rest of the line runs with
    "printf": Spec(runs="-v"),
    "uniq": Spec(flags="-c --count -d --repeated -D -i --ignore-case -u --unique -z --zero-terminated "
                       "--all-repeated --group",
                 args="-f --skip-fields= -s --skip-chars= -w --check-chars= --all-repeated= --group=",
                 written_operand=1),
    "tee": Spec(flags="-a --append -i --ignore-interrupts -p --output-error", args="--output-error=",
                operands=Operands.WRITE),
    "dd": Spec(operands=Operands.DD),
    "tree": Spec(flags="-a -d -l -f -x -q -N -Q -p -u -g -s -h --si --du -D -F -v -t -c -U -r --dirsfirst "
                       "-i -A -S -n -C -X -J -H --noreport --prune --gitignore --charset -1 --inodes --device",
                 args="-L -P -I --filelimit= --timefmt= --sort= --charset= --matchdirs --ignore-case "
                      "--fromfile",
                 writes="-o"),
    "sed": Spec(flags="-n --quiet --silent --debug -E -r --regexp-extended -s --separate -z --null-data -u "
                      "--unbuffered --posix --sandbox --follow-symlinks -b --binary",
                args="-e --expression= -l --line-length=",
                # in-place edits write every operand; a script file cannot be read beforehand
                runs="-i --in-place --in-place= -f --file=",
                script=Script.SED),
    "awk": Spec(flags="--characters-as-bytes -b --traditional -c --copyright -C --lint -L --posix -P "
                      "--re-interval -r --sandbox -S --optimize -O --no-optimize -s -M --bignum -N "
                      "--use-lc-numeric -g --gen-pot -t --lint-old",
                args="-F --field-separator= -v --assign=",
                # (-W is mawk's and gawk's door to more options: `-W exec FILE` runs a program file)
                runs="-W -f --file= -i --include= -l --load= -E --exec= -e --source= -o --pretty-print "
                     "--pretty-print= -p --profile --profile= -d --dump-variables --dump-variables= -D --debug "
                     "--debug=",
                script=Script.AWK),
    "find": Spec(script=Script.FIND),
    "rg": Spec(any_option=False,
               flags="-i --ignore-case -s --case-sensitive -S --smart-case -w --word-regexp -x --line-regexp "
                     "-v --invert-match -F --fixed-strings -n --line-number -N --no-line-number -l "
                     "--files-with-matches --files-without-match -c --count --count-matches -o --only-matching "
                     "--files --hidden -. -u -uu -uuu --no-ignore --no-ignore-vcs -L --follow -a --text -H "
                     "--with-filename -I --no-filename --heading --no-heading --json --vimgrep --color "
                     "--column --trim -U --multiline -P --pcre2 --stats -q --quiet -0 --null -z "
                     "--search-zip --sort-files --no-messages -p --pretty",
               args="-e --regexp= -g --glob= --iglob= -t --type= -T --type-not= -A --after-context= "
                    "-B --before-context= -C --context= -m --max-count= -d --max-depth= --max-filesize= "
                    "-M --max-columns= --color= --colors= -r --replace= --sort= --sortr= -j --threads= "
                    "-E --encoding= --type-add=",
               runs="--pre= --pre-glob= -f --file="),
    "git": Spec(flags="--no-pager -P --no-replace-objects --bare --literal-pathspecs --glob-pathspecs "
                      "--noglob-pathspecs --icase-pathspecs --no-optional-locks --version --help",
                args="-C --git-dir= --work-tree= --namespace=",
                runs="-c --config-env= --exec-path --exec-path= -p --paginate --super-prefix= --attr-source=",
                subcommands=_GIT_SUBCOMMANDS),
    # runners: what they run is another command, which no rule on them can judge
    "env": Spec(flags="-i --ignore-environment -0 --null -v --debug", args="-u --unset= -C --chdir=",
                runs="-S --split-string= --block-signal --block-signal= --default-signal --default-signal= "
                     "--ignore-signal --ignore-signal=",
                operands=Operands.COMMAND, assignments=True),
    "timeout": Spec(flags="--preserve-status --foreground -v --verbose", args="-k --kill-after= -s --signal=",
                    operands=Operands.COMMAND, skip_operands=1),
    "nice": Spec(args="-n --adjustment=", numbers=True, operands=Operands.COMMAND),
    "nohup": Spec(operands=Operands.COMMAND),
    "stdbuf": Spec(args="-i --input= -o --output= -e --error=", operands=Operands.COMMAND),
    # what these run comes from their words or their input; or later (`trap`, `alias` with
    # expand_aliases, a builtin `enable -f` loads, `mapfile -C`'s callback), or evaluate a
    # name's value as arithmetic (`let`), where `a[$(cmd)]` runs cmd
    **{name: Spec(sets_variables=True) for name in "export declare typeset local readonly unset read".split()},
    **{name: Spec(always_runs=True) for name in "xargs bash sh zsh dash eval exec source . sudo su watch "
                                                "parallel command builtin trap alias enable mapfile readarray "
                                                "fc let".split()},
}

#: find's expression: each primary with the number of words it takes.
FIND_READS: dict[str, int] = {
    **dict.fromkeys(
        "-print -print0 -ls -prune -quit -true -false -not -a -and -o -or -depth -follow -xdev -mount -noleaf "
        "-daystart -ignore_readdir_race -noignore_readdir_race -nouser -nogroup -empty -readable -writable "
        "-executable ! ( ) , -d -H -L -P".split(), 0),
    **dict.fromkeys(
        "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -mtime -mmin "
        "-atime -amin -ctime -cmin -newer -anewer -cnewer -perm -user -group -uid -gid -links -inum -samefile "
        "-lname -ilname -maxdepth -mindepth -regextype -fstype -used -printf -context -D -files0-from -newermt "
        "-newerct -neweraa -newermm -newerat -newerma".split(), 1),
}
#: find primaries that run a command or delete; ``FIND_WRITES`` write the file they name.
FIND_RUNS = frozenset("-exec -execdir -ok -okdir -delete".split())
FIND_WRITES: dict[str, int] = {"-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}

__all__ = ["COMMANDS", "FIND_READS", "FIND_RUNS", "FIND_WRITES", "Operands", "Script", "Spec"]
