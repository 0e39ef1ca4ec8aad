#!/usr/bin/env python3
"""Decodes the Chakra traces `pipesched chakra` writes with protoc, against a .proto written from
Chakra's schema, and checks what protoc sees.

Usage: check_chakra_protoc.py PIPESCHED PROTO_FILE WORK_DIR
Exits 77 (skipped) when protoc is not installed. For a few schedules it writes the traces, splits
every file into its varint32-length-delimited messages and, for each message:
  - `protoc --decode` parses it (GlobalMetadata first, then Node) with no unknown fields;
  - `protoc --encode` of the decoded text gives back the same bytes, so every field has the
    number and type the schema gives it;
(one protoc run of each kind per file: the file's messages become the fields of one wrapper
message, `metadata` and the repeated `nodes`, whose encoding is each message's bytes behind a
field tag and the same length, and whose text is each message's text in a block)
and checks the decoded content: the version, unique node ids, the attributes each node type
needs with integer or bool values, and that every receive has exactly one matching send.
"""
import os
import re
import shutil
import subprocess
import sys

CASES = [
    ["--schedule", "1F1B", "--ranks", "2", "--microbatches", "3"],
    ["--schedule", "DualPipeV", "--ranks", "2", "--microbatches", "4", "--chunks", "2", "--iteration",
     "--recompute", "--data-parallel", "2", "--distributed-optimizer"],
]


def fail(message):
    print("check_chakra_protoc.py: " + message, file=sys.stderr)
    sys.exit(1)


def varint(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            fail("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def messages(data):
    pos = 0
    while pos < len(data):
        length, pos = varint(data, pos)
        if pos + length > len(data):
            fail("message runs past the end of the file")
        yield data[pos:pos + length]
        pos += length


WRAPPER = """syntax = "proto3";
import "%s";
package pipesched_check;
message Trace {
  ChakraProtoMsg.GlobalMetadata metadata = 1;
  repeated ChakraProtoMsg.Node nodes = 2;
}
"""


def write_wrapper(proto, work):
    """A .proto in `work` whose message Trace holds one file's messages as its fields."""
    path = os.path.join(work, "trace_wrapper.proto")
    with open(path, "w", encoding="utf-8") as f:
        f.write(WRAPPER % os.path.basename(proto))
    return path


def varint_bytes(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def wrapped(messages_of_file):
    """The Trace encoding of a file's messages: field 1 the first, field 2 every other."""
    out = bytearray()
    for index, message in enumerate(messages_of_file):
        out += b"\x0a" if index == 0 else b"\x12"
        out += varint_bytes(len(message)) + message
    return bytes(out)


def unwrapped(text):
    """Trace's text split back into each message's own text (its block, two spaces less)."""
    blocks = []
    for match in re.finditer(r"^(metadata|nodes) \{\n(.*?)^\}\n", text, re.S | re.M):
        blocks.append("".join(line[2:] + "\n" for line in match.group(2).splitlines()))
    return blocks


def protoc(proto, args, data, include_dirs=()):
    include = [os.path.dirname(os.path.abspath(proto))] + list(include_dirs)
    run = subprocess.run(["protoc"] + [a for d in include for a in ("-I", d)] + args + [os.path.basename(proto)],
                         input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if run.returncode != 0:
        fail("protoc %s failed: %s" % (" ".join(args), run.stderr.decode(errors="replace")))
    return run.stdout


def attributes(text):
    """name -> value field ("uint64_val: 3") for each top-level attr block of a decoded Node."""
    found = {}
    for block in re.findall(r"^attr \{\n(.*?)^\}", text, re.S | re.M):
        name = re.search(r'^  name: "([^"]*)"', block, re.M)
        value = re.search(r"^  (\w+_val|bool_list)", block, re.M)
        if not name or not value:
            fail("attribute without a name or a value:\n" + block)
        number = re.search(r"^  \w+_val: (\S+)", block, re.M)
        found[name.group(1)] = (value.group(1), number.group(1) if number else None)
    return found


def main():
    if len(sys.argv) != 4:
        fail("usage: check_chakra_protoc.py PIPESCHED PROTO_FILE WORK_DIR")
    if shutil.which("protoc") is None:
        print("protoc not found: skipped (Debian package protobuf-compiler)")
        sys.exit(77)
    pipesched, proto, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    wrapper = write_wrapper(proto, work)
    schema_dir = os.path.dirname(os.path.abspath(proto))
    decoded_nodes = 0
    for number, case in enumerate(CASES):
        prefix = os.path.join(work, "case%d" % number)
        run = subprocess.run([pipesched, "chakra"] + case + ["--out", prefix, "--format", "json"],
                             stdout=subprocess.PIPE, check=False)
        if run.returncode != 0:
            fail("pipesched chakra %s exited with %d" % (" ".join(case), run.returncode))
        ranks = int(re.search(rb'"ranks":(\d+)', run.stdout).group(1))
        sends, receives = {}, {}
        for rank in range(ranks):
            with open("%s.%d.et" % (prefix, rank), "rb") as f:
                data = f.read()
            ids = set()
            file_messages = list(messages(data))
            trace = wrapped(file_messages)
            trace_text = protoc(wrapper, ["--decode=pipesched_check.Trace"], trace, [schema_dir]).decode()
            if re.search(r"^\s*[0-9]+:", trace_text, re.M):
                fail("unknown field in rank %d:\n%s" % (rank, trace_text))
            if protoc(wrapper, ["--encode=pipesched_check.Trace"], trace_text.encode(), [schema_dir]) != trace:
                fail("rank %d: protoc --encode of the decoded text differs" % rank)
            texts = unwrapped(trace_text)
            if len(texts) != len(file_messages):
                fail("rank %d: %d messages, %d decoded" % (rank, len(file_messages), len(texts)))
            for index, text in enumerate(texts):
                if index == 0:
                    if text != 'version: "0.0.4"\n':
                        fail("unexpected GlobalMetadata: " + text)
                    continue
                decoded_nodes += 1
                node_id = int(re.search(r"^id: (\d+)", text, re.M).group(1)) if text.startswith("id:") else 0
                if node_id in ids:
                    fail("rank %d: node id %d twice" % (rank, node_id))
                ids.add(node_id)
                node_type = re.search(r"^type: (\w+)", text, re.M).group(1)
                attrs = attributes(text)
                if attrs.get("is_cpu_op", (None,))[0] != "bool_val":
                    fail("rank %d node %d: is_cpu_op must be a bool" % (rank, node_id))
                if node_type in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                    key = []
                    for name in ("comm_src", "comm_dst", "comm_tag", "comm_size"):
                        if attrs.get(name, (None,))[0] != "uint64_val":
                            fail("rank %d node %d: %s must be a uint64" % (rank, node_id, name))
                        key.append(int(attrs[name][1]))
                    side = sends if node_type == "COMM_SEND_NODE" else receives
                    side[tuple(key)] = side.get(tuple(key), 0) + 1
                elif node_type == "COMM_COLL_NODE":
                    for name in ("comm_type", "comm_size"):
                        if attrs.get(name, (None,))[0] != "uint64_val":
                            fail("rank %d node %d: %s must be a uint64" % (rank, node_id, name))
                    if attrs.get("pg_name", (None,))[0] != "string_val":
                        fail("rank %d node %d: pg_name must be a string" % (rank, node_id))
                    if attrs.get("involved_dim", (None,))[0] != "bool_list":
                        fail("rank %d node %d: involved_dim must be a bool_list" % (rank, node_id))
                elif node_type != "COMP_NODE":
                    fail("rank %d node %d: unexpected type %s" % (rank, node_id, node_type))
        if sends != receives or any(count != 1 for count in sends.values()):
            fail("case %d: sends and receives do not pair up one to one" % number)
        if not sends:
            fail("case %d: no p2p messages" % number)
    print("check_chakra_protoc.py: %d nodes decoded by protoc" % decoded_nodes)


if __name__ == "__main__":
    main()
