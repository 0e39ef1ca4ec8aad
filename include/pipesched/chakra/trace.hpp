// pipesched: Chakra execution traces (ET), the workload format of ASTRA-sim 2.0, written and read
// without a protobuf library.
//
// A file is a sequence of length-delimited protobuf messages: a varint32 byte count and then a
// `GlobalMetadata` message, then a varint32 byte count and a `Node` message, repeated to the end of
// the file; there is no header, trailer or compression. The messages follow Chakra's
// `schema/protobuf/et_def.proto` (proto3, package ChakraProtoMsg); only the fields below are
// modelled, every other field is skipped when reading:
//
//   GlobalMetadata  1 version string ("0.0.4"; ASTRA-sim refuses a file whose first message
//                     does not parse, so it is never empty here)
//   Node            1 id uint64, 2 name string, 3 type NodeType, 4 ctrl_deps repeated uint64,
//                   5 data_deps repeated uint64 (both packed), 6 start_time_micros uint64,
//                   7 duration_micros uint64, 10 attr repeated AttributeProto
//   AttributeProto  1 name string, then one of: 7 int32, 9 int64, 11 uint32, 13 uint64,
//                   27 bool, 28 bool_list (a message with repeated bool field 1), 29 string
//
// A oneof member is written even when it is zero: presence is what makes an attribute hold a
// value, and ASTRA-sim aborts on an attribute without one. Integers are written with integer
// types only (ASTRA-sim's feeder refuses to convert a double into an integer attribute).
//
// read_trace() accepts what protobuf parsers accept (unknown fields, packed or unpacked repeated
// scalars, fields in any order); it reports the byte offset and the field of the first problem
// and allocates at most in proportion to the input's size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/enum_table.hpp"

namespace pipesched::chakra {

/// Chakra's NodeType.
enum class node_type : std::uint32_t {
    invalid = 0,
    metadata = 1,
    mem_load = 2,
    mem_store = 3,
    comp = 4,
    comm_send = 5,
    comm_recv = 6,
    comm_coll = 7,
};

/// Chakra's CollectiveCommType (the value of a COMM_COLL node's `comm_type` attribute).
enum class collective : std::uint32_t {
    all_reduce = 0,
    reduce = 1,
    all_gather = 2,
    gather = 3,
    scatter = 4,
    broadcast = 5,
    all_to_all = 6,
    reduce_scatter = 7,
    reduce_scatter_block = 8,
    barrier = 9,
};

inline constexpr auto node_type_names = pipesched::detail::enum_table<node_type::comm_coll>(
    {{node_type::invalid, "INVALID_NODE"}, {node_type::metadata, "METADATA_NODE"},
     {node_type::mem_load, "MEM_LOAD_NODE"}, {node_type::mem_store, "MEM_STORE_NODE"},
     {node_type::comp, "COMP_NODE"}, {node_type::comm_send, "COMM_SEND_NODE"},
     {node_type::comm_recv, "COMM_RECV_NODE"}, {node_type::comm_coll, "COMM_COLL_NODE"}});

[[nodiscard]] constexpr std::string_view to_string(node_type t) noexcept { return pipesched::detail::name_in(node_type_names, t); }

inline constexpr auto collective_names = pipesched::detail::enum_table<collective::barrier>(
    {{collective::all_reduce, "ALL_REDUCE"}, {collective::reduce, "REDUCE"},
     {collective::all_gather, "ALL_GATHER"}, {collective::gather, "GATHER"},
     {collective::scatter, "SCATTER"}, {collective::broadcast, "BROADCAST"},
     {collective::all_to_all, "ALL_TO_ALL"}, {collective::reduce_scatter, "REDUCE_SCATTER"},
     {collective::reduce_scatter_block, "REDUCE_SCATTER_BLOCK"}, {collective::barrier, "BARRIER"}});

[[nodiscard]] constexpr std::string_view to_string(collective c) noexcept { return pipesched::detail::name_in(collective_names, c); }

/// Which member of AttributeProto's `value` oneof is set. `other` is any member this model does
/// not hold (double, lists other than bool_list, ...); its value is skipped when reading.
enum class value_kind : std::uint8_t { none, int32, int64, uint32, uint64, boolean, string, bool_list, other };

/// One AttributeProto: a name and at most one value.
struct attribute {
    std::string name;
    value_kind kind = value_kind::none;
    std::int64_t signed_value = 0;    ///< int32, int64
    std::uint64_t unsigned_value = 0; ///< uint32, uint64, bool (0 or 1)
    std::string text;                 ///< string
    std::vector<bool> bools;          ///< bool_list
    std::string raw;                  ///< other: the member's key and value bytes, written back as read

    [[nodiscard]] static attribute of_int64(std::string n, std::int64_t v) {
        attribute a;
        a.name = std::move(n);
        a.kind = value_kind::int64;
        a.signed_value = v;
        return a;
    }
    [[nodiscard]] static attribute of_uint64(std::string n, std::uint64_t v) {
        attribute a;
        a.name = std::move(n);
        a.kind = value_kind::uint64;
        a.unsigned_value = v;
        return a;
    }
    [[nodiscard]] static attribute of_bool(std::string n, bool v) {
        attribute a;
        a.name = std::move(n);
        a.kind = value_kind::boolean;
        a.unsigned_value = v ? 1 : 0;
        return a;
    }
    [[nodiscard]] static attribute of_string(std::string n, std::string v) {
        attribute a;
        a.name = std::move(n);
        a.kind = value_kind::string;
        a.text = std::move(v);
        return a;
    }
    [[nodiscard]] static attribute of_bool_list(std::string n, std::vector<bool> v) {
        attribute a;
        a.name = std::move(n);
        a.kind = value_kind::bool_list;
        a.bools = std::move(v);
        return a;
    }

    [[nodiscard]] constexpr bool is_integer() const noexcept {
        return kind == value_kind::int32 || kind == value_kind::int64 || kind == value_kind::uint32 ||
               kind == value_kind::uint64;
    }
    /// The value as an unsigned integer; nullopt unless it is a non-negative integer or a bool.
    [[nodiscard]] constexpr std::optional<std::uint64_t> as_unsigned() const noexcept {
        if (kind == value_kind::int32 || kind == value_kind::int64) {
            if (signed_value < 0) return std::nullopt;
            return static_cast<std::uint64_t>(signed_value);
        }
        if (kind == value_kind::uint32 || kind == value_kind::uint64 || kind == value_kind::boolean) {
            return unsigned_value;
        }
        return std::nullopt;
    }

    friend bool operator==(const attribute&, const attribute&) = default;
};

/// One Node message.
struct node {
    std::uint64_t id = 0;
    std::string name;
    node_type type = node_type::invalid;
    std::vector<std::uint64_t> ctrl_deps;
    std::vector<std::uint64_t> data_deps;
    std::uint64_t start_time_micros = 0;
    std::uint64_t duration_micros = 0;
    std::vector<attribute> attrs;

    [[nodiscard]] const attribute* find(std::string_view attr_name) const noexcept {
        for (const attribute& a : attrs) {
            if (a.name == attr_name) return &a;
        }
        return nullptr;
    }
    /// The named attribute as an unsigned integer; nullopt when absent or not one.
    [[nodiscard]] std::optional<std::uint64_t> unsigned_attr(std::string_view attr_name) const noexcept {
        const attribute* a = find(attr_name);
        return a != nullptr ? a->as_unsigned() : std::nullopt;
    }

    friend bool operator==(const node&, const node&) = default;
};

/// One ET file: the metadata version and the nodes in file order.
struct trace {
    std::string version = "0.0.4";
    std::vector<node> nodes;
    friend bool operator==(const trace&, const trace&) = default;
};

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

namespace detail {

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

inline void put_key(std::string& out, std::uint32_t field, wire w) {
    put_varint(out, (std::uint64_t{field} << 3) | static_cast<std::uint8_t>(w));
}

inline void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes) {
    put_key(out, field, wire::bytes);
    put_varint(out, bytes.size());
    out.append(bytes);
}

inline void put_uint(std::string& out, std::uint32_t field, std::uint64_t v) {
    put_key(out, field, wire::varint);
    put_varint(out, v);
}

inline void put_packed(std::string& out, std::uint32_t field, const std::vector<std::uint64_t>& values) {
    if (values.empty()) return;
    std::string body;
    for (std::uint64_t v : values) put_varint(body, v);
    put_bytes(out, field, body);
}

inline std::string encode_attribute(const attribute& a) {
    std::string out;
    if (!a.name.empty()) put_bytes(out, 1, a.name);
    switch (a.kind) {
    // int32 and int64 are written as the two's complement of the 64-bit value, as protobuf does.
    case value_kind::int32: put_uint(out, 7, static_cast<std::uint64_t>(a.signed_value)); break;
    case value_kind::int64: put_uint(out, 9, static_cast<std::uint64_t>(a.signed_value)); break;
    case value_kind::uint32: put_uint(out, 11, a.unsigned_value & 0xFFFFFFFFu); break;
    case value_kind::uint64: put_uint(out, 13, a.unsigned_value); break;
    case value_kind::boolean: put_uint(out, 27, a.unsigned_value != 0 ? 1 : 0); break;
    case value_kind::string: put_bytes(out, 29, a.text); break;
    case value_kind::bool_list: {
        std::string list;
        if (!a.bools.empty()) {
            std::string packed;
            for (bool b : a.bools) packed.push_back(b ? '\1' : '\0');
            put_bytes(list, 1, packed);
        }
        put_bytes(out, 28, list);
        break;
    }
    case value_kind::other: out.append(a.raw); break;
    case value_kind::none: break;
    }
    return out;
}

inline std::string encode_node(const node& n) {
    std::string out;
    if (n.id != 0) put_uint(out, 1, n.id);
    if (!n.name.empty()) put_bytes(out, 2, n.name);
    if (n.type != node_type::invalid) put_uint(out, 3, static_cast<std::uint32_t>(n.type));
    put_packed(out, 4, n.ctrl_deps);
    put_packed(out, 5, n.data_deps);
    if (n.start_time_micros != 0) put_uint(out, 6, n.start_time_micros);
    if (n.duration_micros != 0) put_uint(out, 7, n.duration_micros);
    for (const attribute& a : n.attrs) put_bytes(out, 10, encode_attribute(a));
    return out;
}

inline void put_message(std::string& out, std::string_view message) {
    put_varint(out, message.size());
    out.append(message);
}

} // namespace detail

/// The bytes of one ET file.
[[nodiscard]] inline std::string encode(const trace& t) {
    std::string out;
    std::string metadata;
    detail::put_bytes(metadata, 1, t.version);
    detail::put_message(out, metadata);
    for (const node& n : t.nodes) detail::put_message(out, detail::encode_node(n));
    return out;
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

enum class read_errc : std::uint8_t {
    none,
    empty,             ///< no bytes at all: not even the GlobalMetadata message
    truncated_varint,  ///< the input ends inside a varint
    varint_too_long,   ///< more than 10 bytes, or a message length beyond 32 bits
    truncated,         ///< a length runs past the end of its message or of the file
    bad_wire_type,     ///< wire type 3, 4, 6 or 7 (groups are not used by Chakra)
    wrong_wire_type,   ///< a known field with an unexpected wire type
    bad_field_number,  ///< field number 0
    empty_version,     ///< GlobalMetadata has no version
};

inline constexpr auto read_errc_names = pipesched::detail::enum_table<read_errc::empty_version>({
    {read_errc::none, "no error"},
    {read_errc::empty, "empty file: no GlobalMetadata message"},
    {read_errc::truncated_varint, "the file ends inside a varint"},
    {read_errc::varint_too_long, "varint too long"},
    {read_errc::truncated, "a length runs past the end of the data"},
    {read_errc::bad_wire_type, "unsupported wire type"},
    {read_errc::wrong_wire_type, "field has the wrong wire type"},
    {read_errc::bad_field_number, "field number 0"},
    {read_errc::empty_version, "GlobalMetadata has no version"},
});

[[nodiscard]] constexpr std::string_view describe(read_errc e) noexcept { return pipesched::detail::name_in(read_errc_names, e); }

/// Where reading failed: the byte offset in the file, the message (0 = GlobalMetadata, then
/// 1-based node index) and the field path, e.g. "Node.attr.name".
struct read_error {
    read_errc code = read_errc::none;
    std::size_t offset = 0;
    std::size_t message = 0;
    std::string_view field{};

    [[nodiscard]] std::string what() const {
        std::string s = "byte ";
        s += std::to_string(offset);
        s += message == 0 ? std::string{" (GlobalMetadata"} : " (node message " + std::to_string(message);
        if (!field.empty()) {
            s += ", field ";
            s += field;
        }
        s += "): ";
        s += describe(code);
        return s;
    }
};

struct read_result {
    trace value;
    read_error error;
    [[nodiscard]] explicit operator bool() const noexcept { return error.code == read_errc::none; }
};

namespace detail {

class wire_reader {
public:
    wire_reader(std::string_view data, std::size_t base) noexcept : data_{data}, base_{base} {}

    [[nodiscard]] bool done() const noexcept { return pos_ == data_.size(); }
    [[nodiscard]] std::size_t offset() const noexcept { return base_ + pos_; }

    [[nodiscard]] read_errc varint(std::uint64_t& v) noexcept {
        v = 0;
        for (unsigned shift = 0; shift < 70; shift += 7) {
            if (pos_ == data_.size()) return read_errc::truncated_varint;
            const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
            if (shift == 63 && byte > 1) return read_errc::varint_too_long;
            v |= std::uint64_t{byte & 0x7Fu} << shift;
            if ((byte & 0x80) == 0) return read_errc::none;
        }
        return read_errc::varint_too_long;
    }
    [[nodiscard]] read_errc bytes(std::string_view& out) noexcept {
        std::uint64_t n = 0;
        if (const read_errc e = varint(n); e != read_errc::none) return e;
        if (n > data_.size() - pos_) return read_errc::truncated;
        out = data_.substr(pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return read_errc::none;
    }
    [[nodiscard]] read_errc skip(std::uint8_t w) noexcept {
        std::uint64_t ignored = 0;
        std::string_view ignored_bytes;
        switch (w) {
        case 0: return varint(ignored);
        case 1: return advance(8);
        case 2: return bytes(ignored_bytes);
        case 5: return advance(4);
        default: return read_errc::bad_wire_type;
        }
    }

private:
    [[nodiscard]] read_errc advance(std::size_t n) noexcept {
        if (n > data_.size() - pos_) return read_errc::truncated;
        pos_ += n;
        return read_errc::none;
    }

    std::string_view data_;
    std::size_t base_;
    std::size_t pos_ = 0;
};

/// Reads a field key; `field` and `w` are set on success.
[[nodiscard]] inline read_errc read_key(wire_reader& r, std::uint32_t& field, std::uint8_t& w) noexcept {
    std::uint64_t key = 0;
    if (const read_errc e = r.varint(key); e != read_errc::none) return e;
    w = static_cast<std::uint8_t>(key & 7);
    if ((key >> 3) == 0) return read_errc::bad_field_number;
    if ((key >> 3) > 0x1FFFFFFF) return read_errc::varint_too_long;
    field = static_cast<std::uint32_t>(key >> 3);
    return read_errc::none;
}

struct parse_failure {
    read_errc code = read_errc::none;
    std::size_t offset = 0;
    std::string_view field{};
};

/// A repeated uint64 field, packed (wire type 2) or not (wire type 0).
[[nodiscard]] inline parse_failure read_repeated(wire_reader& r, std::uint8_t w, std::vector<std::uint64_t>& out,
                                                 std::string_view field) {
    const std::size_t at = r.offset();
    if (w == 0) {
        std::uint64_t v = 0;
        if (const read_errc e = r.varint(v); e != read_errc::none) return {e, at, field};
        out.push_back(v);
        return {};
    }
    if (w != 2) return {read_errc::wrong_wire_type, at, field};
    std::string_view body;
    if (const read_errc e = r.bytes(body); e != read_errc::none) return {e, at, field};
    wire_reader inner{body, r.offset() - body.size()};
    while (!inner.done()) {
        std::uint64_t v = 0;
        const std::size_t item = inner.offset();
        if (const read_errc e = inner.varint(v); e != read_errc::none) return {e, item, field};
        out.push_back(v);
    }
    return {};
}

/// A oneof member replaces any member read before it (the last one wins, as in protobuf).
inline void clear_value(attribute& a) {
    a.kind = value_kind::none;
    a.signed_value = 0;
    a.unsigned_value = 0;
    a.text.clear();
    a.bools.clear();
    a.raw.clear();
}

[[nodiscard]] inline parse_failure parse_attribute(std::string_view body, std::size_t base, attribute& a) {
    wire_reader r{body, base};
    while (!r.done()) {
        const std::size_t at = r.offset();
        std::uint32_t field = 0;
        std::uint8_t w = 0;
        if (const read_errc e = read_key(r, field, w); e != read_errc::none) return {e, at, "Node.attr"};
        const auto expect = [&](std::uint8_t wanted, std::string_view name) -> parse_failure {
            if (w != wanted) return {read_errc::wrong_wire_type, at, name};
            return {};
        };
        std::uint64_t v = 0;
        std::string_view bytes;
        switch (field) {
        case 1:
            if (auto f = expect(2, "Node.attr.name"); f.code != read_errc::none) return f;
            if (const read_errc e = r.bytes(bytes); e != read_errc::none) return {e, at, "Node.attr.name"};
            a.name = std::string{bytes};
            break;
        case 7:
        case 9:
        case 11:
        case 13:
        case 27: {
            const std::string_view name = field == 7 ? "Node.attr.int32_val"
                                          : field == 9 ? "Node.attr.int64_val"
                                          : field == 11 ? "Node.attr.uint32_val"
                                          : field == 13 ? "Node.attr.uint64_val"
                                                        : "Node.attr.bool_val";
            if (auto f = expect(0, name); f.code != read_errc::none) return f;
            if (const read_errc e = r.varint(v); e != read_errc::none) return {e, at, name};
            clear_value(a);
            if (field == 7) {
                a.kind = value_kind::int32;
                a.signed_value = static_cast<std::int32_t>(static_cast<std::uint32_t>(v & 0xFFFFFFFFu));
            } else if (field == 9) {
                a.kind = value_kind::int64;
                a.signed_value = static_cast<std::int64_t>(v);
            } else if (field == 11) {
                a.kind = value_kind::uint32;
                a.unsigned_value = v & 0xFFFFFFFFu;
            } else if (field == 13) {
                a.kind = value_kind::uint64;
                a.unsigned_value = v;
            } else {
                a.kind = value_kind::boolean;
                a.unsigned_value = v != 0 ? 1 : 0;
            }
            break;
        }
        case 28: {
            if (auto f = expect(2, "Node.attr.bool_list"); f.code != read_errc::none) return f;
            if (const read_errc e = r.bytes(bytes); e != read_errc::none) return {e, at, "Node.attr.bool_list"};
            clear_value(a);
            a.kind = value_kind::bool_list;
            wire_reader list{bytes, r.offset() - bytes.size()};
            while (!list.done()) {
                const std::size_t item = list.offset();
                std::uint32_t lf = 0;
                std::uint8_t lw = 0;
                if (const read_errc e = read_key(list, lf, lw); e != read_errc::none) {
                    return {e, item, "Node.attr.bool_list"};
                }
                if (lf != 1) {
                    if (const read_errc e = list.skip(lw); e != read_errc::none) return {e, item, "Node.attr.bool_list"};
                    continue;
                }
                std::vector<std::uint64_t> values;
                if (auto f = read_repeated(list, lw, values, "Node.attr.bool_list.values"); f.code != read_errc::none) {
                    return f;
                }
                for (std::uint64_t b : values) a.bools.push_back(b != 0);
            }
            break;
        }
        case 29:
            if (auto f = expect(2, "Node.attr.string_val"); f.code != read_errc::none) return f;
            if (const read_errc e = r.bytes(bytes); e != read_errc::none) return {e, at, "Node.attr.string_val"};
            clear_value(a);
            a.kind = value_kind::string;
            a.text = std::string{bytes};
            break;
        default:
            if (const read_errc e = r.skip(w); e != read_errc::none) return {e, at, "Node.attr"};
            // Another member of the value oneof (3..32) replaces whatever was set before; its
            // bytes are kept so that writing the attribute back loses nothing.
            if (field >= 3 && field <= 32) {
                clear_value(a);
                a.kind = value_kind::other;
                a.raw = std::string{body.substr(at - base, r.offset() - at)};
            }
            break;
        }
    }
    return {};
}

[[nodiscard]] inline parse_failure parse_node(std::string_view body, std::size_t base, node& n) {
    wire_reader r{body, base};
    while (!r.done()) {
        const std::size_t at = r.offset();
        std::uint32_t field = 0;
        std::uint8_t w = 0;
        if (const read_errc e = read_key(r, field, w); e != read_errc::none) return {e, at, "Node"};
        std::uint64_t v = 0;
        std::string_view bytes;
        const auto scalar = [&](std::string_view name, std::uint64_t& out) -> parse_failure {
            if (w != 0) return {read_errc::wrong_wire_type, at, name};
            if (const read_errc e = r.varint(v); e != read_errc::none) return {e, at, name};
            out = v;
            return {};
        };
        parse_failure f{};
        switch (field) {
        case 1: f = scalar("Node.id", n.id); break;
        case 2:
            if (w != 2) return {read_errc::wrong_wire_type, at, "Node.name"};
            if (const read_errc e = r.bytes(bytes); e != read_errc::none) return {e, at, "Node.name"};
            n.name = std::string{bytes};
            break;
        case 3: {
            std::uint64_t t = 0;
            f = scalar("Node.type", t);
            n.type = static_cast<node_type>(static_cast<std::uint32_t>(t));
            break;
        }
        case 4: f = read_repeated(r, w, n.ctrl_deps, "Node.ctrl_deps"); break;
        case 5: f = read_repeated(r, w, n.data_deps, "Node.data_deps"); break;
        case 6: f = scalar("Node.start_time_micros", n.start_time_micros); break;
        case 7: f = scalar("Node.duration_micros", n.duration_micros); break;
        case 10: {
            if (w != 2) return {read_errc::wrong_wire_type, at, "Node.attr"};
            if (const read_errc e = r.bytes(bytes); e != read_errc::none) return {e, at, "Node.attr"};
            attribute a;
            f = parse_attribute(bytes, r.offset() - bytes.size(), a);
            if (f.code == read_errc::none) n.attrs.push_back(std::move(a));
            break;
        }
        default:
            if (const read_errc e = r.skip(w); e != read_errc::none) return {e, at, "Node"};
            break;
        }
        if (f.code != read_errc::none) return f;
    }
    return {};
}

/// A varint32 message length, as Chakra's readers take it: at most 5 bytes and 32 bits.
[[nodiscard]] inline read_errc read_length(std::string_view data, std::size_t& pos, std::uint32_t& length) noexcept {
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (pos == data.size()) return read_errc::truncated_varint;
        const auto byte = static_cast<std::uint8_t>(data[pos++]);
        v |= std::uint64_t{byte & 0x7Fu} << shift;
        if ((byte & 0x80) == 0) break;
        if (shift == 28) return read_errc::varint_too_long;
    }
    if (v > 0xFFFFFFFFu) return read_errc::varint_too_long;
    length = static_cast<std::uint32_t>(v);
    return read_errc::none;
}

} // namespace detail

/// Parses one ET file.
[[nodiscard]] inline read_result read_trace(std::string_view data) {
    read_result out;
    out.value.version.clear();
    if (data.empty()) {
        out.error = {read_errc::empty, 0, 0, {}};
        return out;
    }
    std::size_t pos = 0;
    std::size_t index = 0;
    while (pos < data.size()) {
        const std::size_t start = pos;
        std::uint32_t length = 0;
        if (const read_errc e = detail::read_length(data, pos, length); e != read_errc::none) {
            out.error = {e, start, index, "length prefix"};
            return out;
        }
        if (length > data.size() - pos) {
            out.error = {read_errc::truncated, start, index, "length prefix"};
            return out;
        }
        const std::string_view body = data.substr(pos, length);
        if (index == 0) {
            detail::wire_reader r{body, pos};
            while (!r.done()) {
                const std::size_t at = r.offset();
                std::uint32_t field = 0;
                std::uint8_t w = 0;
                std::string_view bytes;
                read_errc e = detail::read_key(r, field, w);
                if (e == read_errc::none && field == 1) {
                    e = w == 2 ? r.bytes(bytes) : read_errc::wrong_wire_type;
                    if (e == read_errc::none) out.value.version = std::string{bytes};
                } else if (e == read_errc::none) {
                    e = r.skip(w);
                }
                if (e != read_errc::none) {
                    out.error = {e, at, 0, field == 1 ? "GlobalMetadata.version" : "GlobalMetadata"};
                    return out;
                }
            }
            if (out.value.version.empty()) {
                out.error = {read_errc::empty_version, start, 0, "GlobalMetadata.version"};
                return out;
            }
        } else {
            node n;
            if (const auto f = detail::parse_node(body, pos, n); f.code != read_errc::none) {
                out.error = {f.code, f.offset, index, f.field};
                return out;
            }
            out.value.nodes.push_back(std::move(n));
        }
        pos += length;
        ++index;
    }
    return out;
}

} // namespace pipesched::chakra
