"""A TF1-style program using af.app.flags and af.app.run, run as a real process by test_flags_app.py.

`python flags_program.py ARGS` prints main's argv and the flag values (JSON) and exits with 3 (main's
return value); `python flags_program.py direct ARGS` reads a flag without app.run (FLAGS parses sys.argv).
"""

import json
import sys

import asyncflow as tf

flags = tf.app.flags
flags.DEFINE_string("data_dir", "/tmp/data", "where the data is")
flags.DEFINE_integer("steps", 10, "steps")
flags.DEFINE_float("lr", 0.1, "learning rate")
flags.DEFINE_boolean("sync", False, "sync")
flags.DEFINE_bool("verbose", True, "verbose")
flags.DEFINE_list("hosts", "a,b", "hosts")
flags.DEFINE_enum("mode", "train", ["train", "eval"], "mode")
flags.DEFINE_multi_string("tag", [], "tags")
flags.DEFINE_multi_integer("ids", [1], "ids")
tf.flags.DEFINE_string(flag_name="old", default_value="o", docstring="TF1's old keyword names")
flags.DEFINE_string("needed", None, "a required flag")
FLAGS = flags.FLAGS
NAMES = ["data_dir", "steps", "lr", "sync", "verbose", "hosts", "mode", "tag", "ids", "old"]


def main(argv):
    print(json.dumps({"argv": argv[1:], "flags": {k: getattr(FLAGS, k) for k in NAMES}}))
    return 3


if __name__ == "__main__":
    if sys.argv[1:2] == ["direct"]:
        sys.argv.pop(1)
        print(json.dumps({"steps": FLAGS.steps}))
    elif sys.argv[1:2] == ["required"]:
        sys.argv.pop(1)
        flags.mark_flag_as_required("needed")
        tf.app.run()
    else:
        tf.app.run()
