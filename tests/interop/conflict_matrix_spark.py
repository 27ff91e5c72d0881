#!/usr/bin/env python3
"""delta-spark's decisions for the concurrent pairs of conflict_cases.py -> conflict_matrix.json.

Usage: conflict_matrix_spark.py [OUT.json] [CASE-SUBSTRING ...]

Both transactions are delta-spark OptimisticTransactions opened on the same snapshot through
py4j, exactly as delta-spark's own OptimisticTransactionSuite interleaves them: reads are
recorded with txn.filterFiles / txn.txnVersion, the winner commits, then the loser commits
and either lands (rebased) or throws. One SparkSession for every case. The output records, per
case, the loser's outcome ("commit" with its version, or the exception's class name and the
first line of its message) plus the versions and libraries used; it is regenerated only when
this file, conflict_cases.py or the pinned versions change (scripts/conflict_matrix.sh).
"""
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import conflict_cases  # noqa: E402


def fingerprint():
    h = hashlib.sha256()
    for f in ("conflict_cases.py", "conflict_matrix_spark.py", "requirements.txt"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:32]


def make_bases(spark, root):
    part = os.path.join(root, "part")
    df = spark.createDataFrame([(1, "a"), (2, "a")], "x long, p string")
    df.coalesce(1).write.format("delta").partitionBy("p").save(part)
    df = spark.createDataFrame([(8, "b"), (9, "b")], "x long, p string")
    df.coalesce(1).write.format("delta").mode("append").save(part)
    flat = os.path.join(root, "flat")
    spark.createDataFrame([(1,), (2,)], "x long").coalesce(1).write.format("delta").save(flat)
    spark.createDataFrame([(8,), (9,)], "x long").coalesce(1).write.format("delta") \
        .mode("append").save(flat)
    return {"part": part, "flat": flat}


class Runner:
    def __init__(self, spark):
        self.spark = spark
        self.jvm = spark._jvm
        self.jspark = spark._jsparkSession
        d = self.jvm.org.apache.spark.sql.delta
        self.DeltaLog = d.DeltaLog
        self.Action = d.actions.Action
        self.conv = self.jvm.scala.jdk.javaapi.CollectionConverters
        self.manual = getattr(getattr(d, "DeltaOperations$ManualUpdate$"), "MODULE$")
        self.parser = self.jspark.sessionState().sqlParser()

    def seq(self, items):
        lst = self.jvm.java.util.ArrayList()
        for x in items:
            lst.add(x)
        return self.conv.asScala(lst).toSeq()

    def jlist(self, seq):
        return list(self.conv.asJava(seq))

    def resolve(self, txn, sql):
        path = txn.deltaLog().dataPath().toString()
        plan = self.spark.read.format("delta").load(path).where(sql)._jdf.queryExecution() \
            .analyzed()
        return plan.condition()

    def add_action(self, part, data_change):
        path = ("p=%s/" % part if part else "") + "part-00000-%s.c000.snappy.parquet" % uuid.uuid4()
        a = {"path": path, "partitionValues": {"p": part} if part else {}, "size": 1000,
             "modificationTime": int(time.time() * 1000), "dataChange": data_change,
             "stats": json.dumps({"numRecords": 1})}
        return self.Action.fromJson(json.dumps({"add": a}))

    def stage(self, txn, op):
        """Records op's reads on txn and returns the actions it would commit."""
        read = []
        for kind, arg in op.get("reads", []):
            if kind == "pred":
                # resolved against the table, as DELETE/replaceWhere resolve theirs (an
                # unresolved expression would not be used for data skipping)
                files = txn.filterFiles(self.seq([self.resolve(txn, arg)]), False)
                read += self.jlist(files)
            elif kind == "dyn":
                files = txn.filterFiles(self.seq([self.add_action(arg, True)]))
                read += self.jlist(files)
            elif kind == "app":
                txn.txnVersion(arg)
        actions = []
        if op.get("meta"):
            m = json.loads(txn.metadata().json())["metaData"]
            m.setdefault("configuration", {}).update(op["meta"])
            actions.append(self.Action.fromJson(json.dumps({"metaData": m})))
        if op.get("protocol"):
            r, w = op["protocol"]
            actions.append(self.Action.fromJson(json.dumps(
                {"protocol": {"minReaderVersion": r, "minWriterVersion": w}})))
        if op.get("txn"):
            app, ver = op["txn"]
            actions.append(self.Action.fromJson(json.dumps(
                {"txn": {"appId": app, "version": ver, "lastUpdated": int(time.time() * 1000)}})))
        if op.get("remove") is not None:
            ts = int(time.time() * 1000)
            for f in read:
                actions.append(f.removeWithTimestamp(ts, bool(op["remove"])))
        for part, dc in op.get("adds", []):
            actions.append(self.add_action(part, dc))
        return self.seq(actions)

    def run_case(self, base, table, wname, lname, tmp):
        path = os.path.join(tmp, "t-%s" % uuid.uuid4().hex)
        shutil.copytree(base, path)
        log = self.DeltaLog.forTable(self.jspark, path)
        tw = log.startTransaction()
        tl = log.startTransaction()
        aw = self.stage(tw, conflict_cases.op_for(table, wname))
        al = self.stage(tl, conflict_cases.op_for(table, lname))
        vw = tw.commit(aw, self.manual)
        try:
            vl = tl.commit(al, self.manual)
            res = {"outcome": "commit", "version": vl}
        except Exception as e:  # noqa: BLE001 - pyspark's captured Delta/Java exceptions
            je = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
            name = je.getClass().getSimpleName() if je is not None else type(e).__name__
            msg = (str(e).strip().splitlines() or [""])[0]
            m = re.match(r"\[([A-Z0-9_.]+)\]", msg)
            msg = msg.replace("file:" + path, "<table>").replace(path, "<table>")
            res = {"outcome": name, "error_class": m.group(1) if m else None, "message": msg}
        res["winner_version"] = vw
        shutil.rmtree(path, ignore_errors=True)
        return res


def isolation_probe(spark, tmp):
    """Whether OSS delta-spark accepts delta.isolationLevel=WriteSerializable on a table."""
    p = os.path.join(tmp, "iso")
    try:
        spark.sql("CREATE TABLE delta.`%s` (x long) USING delta "
                  "TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable')" % p)
        return {"accepted": True}
    except Exception as e:  # noqa: BLE001
        je = getattr(e, "java_exception", None)
        return {"accepted": False,
                "error": je.getClass().getSimpleName() if je is not None else type(e).__name__}


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "conflict_matrix.json")
    filters = argv[2:]
    from sparkenv import get_spark, versions
    # resume: cases already decided by this same runner (fingerprint) are kept
    results, seconds = {}, 0.0
    partial = out + ".partial"
    for prev in (out, partial):
        try:
            with open(prev) as f:
                doc = json.load(f)
            if doc.get("fingerprint") == fingerprint():
                results.update(doc.get("cases", {}))
                seconds = max(seconds, doc.get("seconds", 0.0))
        except (OSError, ValueError):
            pass
    spark = get_spark("dk-conflict-matrix")
    tmp = tempfile.mkdtemp(prefix="dk-cm-")

    def save(path, extra):
        doc = {"fingerprint": fingerprint(), "versions": versions(),
               "seconds": round(seconds + time.time() - t0, 1), "cases": results}
        doc.update(extra)
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(path + ".tmp", path)

    try:
        bases = make_bases(spark, tmp)
        r = Runner(spark)
        t0 = time.time()
        for name, table, w, l in conflict_cases.cases():
            if filters and not any(f in name for f in filters):
                continue
            if name in results:
                continue
            res = r.run_case(bases[table], table, w, l, tmp)
            results[name] = res
            print("%-50s %s" % (name, res["outcome"]), flush=True)
            save(partial, {})  # a killed run resumes where it stopped
        save(out, {"isolation_write_serializable": isolation_probe(spark, tmp)})
        if os.path.exists(partial):
            os.remove(partial)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
