"""Hash candidate strings into a google/rappor map.csv.

CANDIDATES is UTF-8 text with one candidate per line (used exactly as written: no
trimming).  Blank lines and repeated candidates are errors, naming the line; with
'--allow-duplicates' repeats are dropped with a warning instead.  Each output row is
the candidate, then for cohort 0..m-1, h fields: the 1-based rows
'cohort*k + bit + 1' of its Bloom bits.

'--hashing google' hashes as google/rappor's client does (MD5; see
rappor.collect._compat), for collections that client encoded, and writes its hash_candidates.py's
map.csv byte for byte: each cohort's indices in hash order (repeated where two hashes
coincide) and CRLF line ends.  The default writes each cohort's distinct indices in
increasing order (the last one repeated to fill h fields) and LF line ends.
"""

from __future__ import annotations

import argparse

from .._util.memory import check_design
from .._util.paths import STDIO
from ..collect import google_bloom_bits_table, hash_block_size, hash_candidates
from ..formats import read_candidates, write_map, write_map_positions
from ._common import CommandFiles, add_output_argument, add_params_argument, load_params

NAME = "hash-candidates"
HELP = "hash candidate strings into map.csv"
ORDER = 32


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor hash-candidates``."""
    parser.add_argument("candidates", nargs="?", default=STDIO, metavar="CANDIDATES",
                        help="candidate file, one per line ('-' for stdin) [default: stdin]")
    add_params_argument(parser)
    parser.add_argument("--allow-duplicates", action="store_true",
                        help="drop repeated candidates with a warning instead of failing")
    parser.add_argument("--hashing", choices=("rappor", "google"), default="rappor",
                        help="Bloom hashing of the clients: 'rappor' (this package, MurmurHash3) or "
                             "'google' (google/rappor's client, MD5) [default: rappor]")
    add_output_argument(parser, help_text="output map.csv ('-' for stdout)")


def files(args: argparse.Namespace) -> CommandFiles:
    """CANDIDATES and ``--params`` in; ``-o`` out."""
    return CommandFiles(inputs=[("CANDIDATES", args.candidates), ("--params", args.params)],
                        outputs=[("-o", args.output)])


def run(args: argparse.Namespace) -> int:
    """Read the candidates, then hash and write map.csv a block of candidates at a time.

    Memory holds the candidates and one block's map, not the whole map (``S * m * h``
    indices): 100,000 candidates at k=16 m=64 h=2 peaked at 216 MB (tracemalloc), now
    about the candidates' 7 MB and a block.
    """
    params = load_params(args)
    strings = read_candidates(args.candidates, allow_duplicates=args.allow_duplicates)
    block = hash_block_size(params)
    check_design(params, min(block, len(strings)), total=len(strings))  # before the output is opened
    starts = range(0, len(strings), block)
    if args.hashing == "google":
        write_map_positions(((strings[i:i + block], google_bloom_bits_table(strings[i:i + block], params))
                             for i in starts), params, args.output)
    else:
        write_map((hash_candidates(strings[i:i + block], params) for i in starts), args.output)
    return 0
