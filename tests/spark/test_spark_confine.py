"""Path confinement in the Spark connector (#18 item 3): a log may name data files by absolute
path or URI outside the table root (delta-spark reads them: shallow clones do this). By default
the connector reads them too, as delta-spark does (the oracle, same session); with the read
option confinePaths=true, or the session's spark.dk.confinePaths for catalog tables, libdk
refuses every file outside the root (dk_table_options.confine_paths) with an error naming it."""
import glob
import json
import os
import shutil

import pytest

from sparkcmp import assert_same


def outside_table(spark, tmp_path):
    """A Spark-written table one of whose data files lives outside its root, named in the log
    by absolute file: URI."""
    root, away = str(tmp_path / "t"), tmp_path / "elsewhere"
    spark.range(0, 40, 1, 2).selectExpr("id", "id % 3 AS k").write.format("delta").save(root)
    away.mkdir()
    log = os.path.join(root, "_delta_log", "%020d.json" % 0)
    lines, moved = [], None
    for line in open(log):
        a = json.loads(line)
        if "add" in a and moved is None:
            moved = str(away / os.path.basename(a["add"]["path"]))
            shutil.move(os.path.join(root, a["add"]["path"]), moved)
            a["add"]["path"] = "file://" + moved
        lines.append(json.dumps(a))
    with open(log, "w") as f:
        f.write("\n".join(lines) + "\n")
    # the commit's checksums (Delta's .crc, Hadoop's hidden .<file>.crc) no longer match
    for crc in glob.glob(os.path.join(root, "_delta_log", "*.crc")) + \
            glob.glob(os.path.join(root, "_delta_log", ".*.crc")):
        os.remove(crc)
    return root, moved


def test_absolute_paths_read_by_default_refused_when_confined(spark, tmp_path):
    root, moved = outside_table(spark, tmp_path)
    want = spark.read.format("delta").load(root)
    assert want.count() == 40
    assert_same(spark.read.format("dk").load(root), want, "absolute data path, not confined")
    with pytest.raises(Exception, match="outside the table root"):
        spark.read.format("dk").option("confinePaths", "true").load(root).collect()
    spark.conf.set("spark.dk.confinePaths", "true")
    try:
        with pytest.raises(Exception, match="outside the table root"):
            spark.sql(f"SELECT * FROM dk.`{root}`").collect()
        # an explicit option wins over the session's
        assert spark.read.format("dk").option("confinePaths", "false").load(root).count() == 40
    finally:
        spark.conf.unset("spark.dk.confinePaths")
    assert spark.sql(f"SELECT count(*) FROM dk.`{root}`").first()[0] == 40
