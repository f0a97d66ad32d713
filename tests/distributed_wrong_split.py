"""`python -m transformer.train` with a deliberately wrong split: every rank trains on the first share of each
step (test_distributed.py checks that the equivalence test catches it)."""
import sys

from transformer import data, train

right = data.deal
data.deal = lambda batch, tgt, parts: [right(batch, tgt, parts)[0]] * parts

if __name__ == "__main__":
    train.main(sys.argv[1:])
