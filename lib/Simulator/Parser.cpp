//===- Parser.cpp - PTX text to the decoded program -----------------------===//
//
// A tokenizer and a recursive-descent parser for the subset of PTX that
// compilers emit for compute kernels: the module header, `.entry` kernels
// with their `.param`s and performance directives, `.reg`, `.shared` and
// `.local` declarations (module or function scope, extern dynamic shared
// memory included), labels, predicated instructions and `{ }` scopes.
// Debug directives (`.loc`, `.file`, `.section`) are skipped; `.func`
// definitions are skipped (calls are not supported).
//
// Each instruction is decoded on the spot by its description (the registry
// Instructions.def): its opcode's modifiers into the fields of `Inst`, its
// operands into pre-classified `Operand`s. Anything not implemented is an
// Unsupported error naming the opcode and its line.
//
//===----------------------------------------------------------------------===//

#include "Instructions.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::detail;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

const char *detail::stringify(Ty t) {
  switch (t) {
  case Ty::None: return "none";
  case Ty::Pred: return "pred";
  case Ty::B8: return "b8";
  case Ty::B16: return "b16";
  case Ty::B32: return "b32";
  case Ty::B64: return "b64";
  case Ty::U8: return "u8";
  case Ty::U16: return "u16";
  case Ty::U32: return "u32";
  case Ty::U64: return "u64";
  case Ty::S8: return "s8";
  case Ty::S16: return "s16";
  case Ty::S32: return "s32";
  case Ty::S64: return "s64";
  case Ty::F16: return "f16";
  case Ty::F16x2: return "f16x2";
  case Ty::BF16: return "bf16";
  case Ty::BF16x2: return "bf16x2";
  case Ty::F32: return "f32";
  case Ty::F64: return "f64";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

namespace {

enum class Tok { Ident, Number, String, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  uint32_t line = 0;
  bool is(std::string_view s) const {
    return kind != Tok::End && kind != Tok::String && text == s;
  }
};

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '%' || c == '.';
}
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.';
}

/// Splits PTX text into tokens, dropping comments.
Status tokenize(std::string_view src, const std::string &name,
                std::vector<Token> &out) {
  if (src.size() > kMaxPtxBytes)
    return Status::make(ErrorCode::Limit,
                        name + ": a PTX text of " + std::to_string(src.size()) +
                            " bytes, over the simulator's limit of " +
                            std::to_string(kMaxPtxBytes));
  uint32_t line = 1;
  size_t i = 0, n = src.size();
  while (i < n) {
    if (out.size() >= kMaxPtxTokens)
      return Status::make(ErrorCode::Limit,
                          name + ":" + std::to_string(line) + ": more than " +
                              std::to_string(kMaxPtxTokens) +
                              " tokens, the simulator's limit");
    char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) {
        if (src[i] == '\n')
          ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    Token t;
    t.line = line;
    size_t start = i;
    if (c == '"') {
      ++i;
      while (i < n && src[i] != '"')
        ++i;
      if (i >= n)
        return Status::make(ErrorCode::Parse, name + ":" +
                                                  std::to_string(line) +
                                                  ": unterminated string");
      t.kind = Tok::String;
      t.text = src.substr(start + 1, i - start - 1);
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      bool decimal = !(c == '0' && i + 1 < n &&
                       std::strchr("xXfFdD", src[i + 1]) != nullptr);
      while (i < n && (std::isalnum(static_cast<unsigned char>(src[i])) ||
                       src[i] == '.' || src[i] == '_')) {
        char d = src[i++];
        if (decimal && (d == 'e' || d == 'E') && i < n &&
            (src[i] == '+' || src[i] == '-'))
          ++i;
      }
      t.kind = Tok::Number;
      t.text = src.substr(start, i - start);
    } else if (isIdentStart(c)) {
      ++i;
      while (i < n) {
        if (isIdentChar(src[i])) {
          ++i;
        } else if (src[i] == ':' && i + 2 < n && src[i + 1] == ':' &&
                   isIdentChar(src[i + 2])) {
          i += 2; // shared::cta, L2::128B
        } else {
          break;
        }
      }
      t.kind = Tok::Ident;
      t.text = src.substr(start, i - start);
    } else {
      t.kind = Tok::Punct;
      t.text = src.substr(i, 1);
      ++i;
    }
    out.push_back(t);
  }
  Token end;
  end.line = line;
  out.push_back(end);
  return Status::success();
}

std::optional<int64_t> parseInteger(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  if (s.back() == 'U' || s.back() == 'u')
    s.remove_suffix(1);
  std::string str(s);
  char *end = nullptr;
  int base = 10;
  const char *p = str.c_str();
  if (str.size() > 2 && str[0] == '0' && (str[1] == 'x' || str[1] == 'X')) {
    base = 16;
    p += 2;
  } else if (str.size() > 1 && str[0] == '0' &&
             std::all_of(str.begin(), str.end(),
                         [](char c) { return c >= '0' && c <= '7'; })) {
    base = 8;
  }
  errno = 0;
  unsigned long long v = std::strtoull(p, &end, base);
  if (errno || *end)
    return std::nullopt;
  return static_cast<int64_t>(v);
}

/// An alignment from the text: a power of two from 1 to kMaxAlign.
std::optional<uint64_t> parseAlign(std::string_view s) {
  std::optional<int64_t> a = parseInteger(s);
  if (!a || *a <= 0 || static_cast<uint64_t>(*a) > kMaxAlign ||
      (*a & (*a - 1)) != 0)
    return std::nullopt;
  return static_cast<uint64_t>(*a);
}

/// `v` rounded up to a multiple of `align` (a power of two). Callers keep
/// `v` far below 2^63.
uint64_t alignUp(uint64_t v, uint64_t align) {
  return (v + align - 1) & ~(align - 1);
}

const std::string kBadAlign =
    "': an alignment is a power of two from 1 to " + std::to_string(kMaxAlign);

//===----------------------------------------------------------------------===//
// Opcode decoding
//===----------------------------------------------------------------------===//

/// Splits "ld.global.v4.u32" into {"ld", "global", "v4", "u32"}.
std::vector<std::string_view> splitOpcode(std::string_view op) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= op.size(); ++i) {
    if (i == op.size() || op[i] == '.') {
      parts.push_back(op.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

/// A description's decoder (Instructions.def).
using DecodeFn = std::string (*)(const OpcodeParts &, Inst &);

/// The decoders of the descriptions in Instructions.def by spelling, and
/// the most components of a spelling.
struct SpellingTable {
  std::unordered_map<std::string_view, DecodeFn> decoders;
  size_t maxComponents = 0;

  SpellingTable() {
#define FLASHC_SIM_OP(Name, Description)                                       \
  add(Description::spellings, &Description::decode);
#include "Instructions.def"
  }

  template <size_t N>
  void add(const std::string_view (&spellings)[N], DecodeFn decode) {
    for (std::string_view spelling : spellings) {
      // A description that owns several operations comes once per
      // operation.
      auto [it, fresh] = decoders.emplace(spelling, decode);
      assert((fresh || it->second == decode) &&
             "two descriptions share a spelling");
      (void)it;
      (void)fresh;
      maxComponents = std::max<size_t>(
          maxComponents, std::count(spelling.begin(), spelling.end(), '.') + 1);
    }
  }
};

/// Decodes the opcode spelling into `inst` (everything but the operands)
/// with the description whose spelling matches the most leading components
/// of it. Returns an empty string on success, else why the opcode is
/// unsupported.
std::string decodeOpcode(std::string_view opcode, Inst &inst) {
  static const SpellingTable table;
  std::vector<std::string_view> p = splitOpcode(opcode);
  for (size_t n = std::min(p.size(), table.maxComponents); n > 0; --n) {
    std::string_view spelling =
        opcode.substr(0, p[n - 1].data() + p[n - 1].size() - opcode.data());
    auto it = table.decoders.find(spelling);
    if (it == table.decoders.end())
      continue;
    // Collect the type suffixes in order; the description handles the rest.
    OpcodeParts parts;
    parts.opcode = opcode;
    parts.spelling = spelling;
    for (size_t i = n; i < p.size(); ++i) {
      if (std::optional<Ty> t = parseType(p[i]))
        parts.types.push_back(*t);
      else
        parts.rest.push_back(p[i]);
    }
    return it->second(parts, inst);
  }
  return kUnsupported;
}

//===----------------------------------------------------------------------===//
// The parser
//===----------------------------------------------------------------------===//

struct SharedVar {
  uint64_t align = 1;
  uint64_t bytes = 0;
  bool isExtern = false;
};

class Parser {
public:
  Parser(std::vector<Token> &tokens, Program &program)
      : toks(tokens), prog(program) {}

  Status parseModule();

private:
  std::vector<Token> &toks;
  Program &prog;
  size_t pos = 0;
  /// Module-scope shared variables, in declaration order.
  std::vector<std::pair<std::string, SharedVar>> moduleShared;

  const Token &peek(size_t ahead = 0) const {
    return toks[std::min(pos + ahead, toks.size() - 1)];
  }
  const Token &next() {
    const Token &t = toks[pos];
    if (pos + 1 < toks.size())
      ++pos;
    return t;
  }
  bool consume(std::string_view s) {
    if (peek().is(s)) {
      next();
      return true;
    }
    return false;
  }
  Status fail(const Token &at, const std::string &msg) const {
    return Status::make(ErrorCode::Parse, prog.sourceName + ":" +
                                              std::to_string(at.line) + ": " +
                                              msg);
  }
  Status expect(std::string_view s) {
    if (consume(s))
      return Status::success();
    return fail(peek(), "expected '" + std::string(s) + "', found '" +
                            std::string(peek().text) + "'");
  }
  /// Skips the tokens of the current line (for line-terminated directives).
  void skipLine() {
    uint32_t line = peek().line;
    while (peek().kind != Tok::End && peek().line == line)
      next();
  }
  /// Skips a balanced `{ ... }` block starting at the current `{`.
  void skipBlock() {
    int depth = 0;
    do {
      const Token &t = next();
      if (t.is("{"))
        ++depth;
      else if (t.is("}"))
        --depth;
      if (t.kind == Tok::End)
        return;
    } while (depth > 0);
  }
  Status parseVarDecl(Space space, bool isExtern,
                      std::vector<std::pair<std::string, SharedVar>> *sharedOut,
                      uint32_t *localBytes);
  Status parseEntry();
  Status skipFunc();
};

/// `[.align N] .type name[SIZE] [= {...}];` after the state space token.
Status
Parser::parseVarDecl(Space space, bool isExtern,
                     std::vector<std::pair<std::string, SharedVar>> *sharedOut,
                     uint32_t *localBytes) {
  SharedVar var;
  var.isExtern = isExtern;
  Ty elem = Ty::B8;
  const Token &start = peek();
  while (peek().kind == Tok::Ident && peek().text[0] == '.') {
    std::string_view d = next().text.substr(1);
    if (d == "align") {
      std::string_view text = next().text;
      std::optional<uint64_t> a = parseAlign(text);
      if (!a)
        return fail(start, "bad .align '" + std::string(text) + kBadAlign);
      var.align = *a;
    } else if (std::optional<Ty> t = parseType(d)) {
      elem = *t;
    } else if (d == "v2" || d == "v4") {
      return fail(start, "vector variables are not supported");
    } else {
      return fail(start, "unexpected '." + std::string(d) +
                             "' in a variable declaration");
    }
  }
  const Token &name = next();
  if (name.kind != Tok::Ident)
    return fail(name, "expected a variable name");
  uint64_t count = 1;
  bool unsized = false;
  while (consume("[")) {
    if (consume("]")) {
      unsized = true;
      continue;
    }
    std::optional<int64_t> n = parseInteger(next().text);
    if (!n || *n < 0)
      return fail(name, "bad array size for '" + std::string(name.text) + "'");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(*n), &count))
      count = UINT64_MAX; // too large below
    if (Status e = expect("]"))
      return e;
  }
  if (peek().is("="))
    return fail(name, "initialised variables are not supported ('" +
                          std::string(name.text) + "')");
  if (Status e = expect(";"))
    return e;
  uint64_t bytes;
  if (__builtin_mul_overflow(count, uint64_t(std::max(1u, sizeOf(elem))),
                             &bytes) ||
      bytes > kMaxVariableBytes)
    return fail(name, "variable '" + std::string(name.text) +
                          "' is larger than the limit of " +
                          std::to_string(kMaxVariableBytes) + " bytes");
  var.bytes = bytes;
  if (space == Space::Shared) {
    if (unsized && !isExtern)
      return fail(name, "an unsized .shared array must be .extern");
    sharedOut->emplace_back(std::string(name.text), var);
    return Status::success();
  }
  if (space == Space::Local && localBytes) {
    // Locals are laid out by the caller; record the name.
    sharedOut->emplace_back(std::string(name.text), var);
    (void)localBytes;
    return Status::success();
  }
  return fail(name, "variables in this state space are not supported");
}

Status Parser::skipFunc() {
  // .func [(.param ...)] name (.param ...) [.noreturn] { ... } or ;
  while (peek().kind != Tok::End && !peek().is("{") && !peek().is(";"))
    next();
  if (peek().is("{"))
    skipBlock();
  else
    next();
  return Status::success();
}

Status Parser::parseModule() {
  while (peek().kind != Tok::End) {
    const Token &t = peek();
    if (t.is(".version") || t.is(".target") || t.is(".address_size") ||
        t.is(".file") || t.is(".loc")) {
      skipLine();
      continue;
    }
    if (t.is(".section")) {
      while (peek().kind != Tok::End && !peek().is("{"))
        next();
      skipBlock();
      continue;
    }
    if (t.is(".pragma")) {
      while (peek().kind != Tok::End && !peek().is(";"))
        next();
      next();
      continue;
    }
    bool isExtern = false;
    while (peek().is(".visible") || peek().is(".extern") ||
           peek().is(".weak") || peek().is(".common")) {
      isExtern |= peek().is(".extern");
      next();
    }
    if (peek().is(".entry")) {
      if (Status e = parseEntry())
        return e;
      continue;
    }
    if (peek().is(".func")) {
      if (Status e = skipFunc())
        return e;
      continue;
    }
    if (peek().is(".shared")) {
      next();
      if (Status e =
              parseVarDecl(Space::Shared, isExtern, &moduleShared, nullptr))
        return e;
      continue;
    }
    if (peek().is(".global") || peek().is(".const")) {
      return fail(peek(), "module-scope " + std::string(peek().text) +
                              " variables are not supported");
    }
    return fail(peek(), "unexpected '" + std::string(peek().text) +
                            "' at module scope");
  }
  return Status::success();
}

/// The per-function state of instruction decoding.
struct FunctionScope {
  /// Register names visible in each open scope.
  std::vector<std::unordered_map<std::string, int32_t>> regScopes;
  /// `%r<40>` style families: prefix -> (first index, count), per scope.
  std::vector<std::unordered_map<std::string, std::pair<int32_t, int32_t>>>
      familyScopes;
  /// Labels by (block, name): a label is visible in its `{ }` block and
  /// the blocks inside it (inline assembly repeats its local labels in
  /// blocks of its own). Blocks are numbered as they open; `blockParent`
  /// gives each one's enclosing block, `openBlocks` the chain now open.
  std::map<std::pair<uint32_t, std::string>, uint32_t> labels;
  std::vector<uint32_t> blockParent{0};
  std::vector<uint32_t> openBlocks{0};
  /// (instruction index, label, line, block) of branches to resolve.
  std::vector<std::tuple<size_t, std::string, uint32_t, uint32_t>>
      pendingBranches;
  std::unordered_map<std::string, uint64_t> sharedSymbols; // -> address
  std::unordered_map<std::string, uint64_t> localSymbols;
  std::unordered_map<std::string, uint32_t> paramSymbols;  // -> offset
  std::vector<Ty> regTypes;

  std::optional<int32_t> lookupReg(const std::string &name) const {
    for (size_t s = regScopes.size(); s-- > 0;) {
      auto it = regScopes[s].find(name);
      if (it != regScopes[s].end())
        return it->second;
      // %r12 of a family %r<N>.
      size_t d = name.size();
      while (d > 0 && std::isdigit(static_cast<unsigned char>(name[d - 1])))
        --d;
      if (d == name.size() || d == 0)
        continue;
      auto fam = familyScopes[s].find(name.substr(0, d));
      if (fam == familyScopes[s].end())
        continue;
      if (name.size() - d > 1 && name[d] == '0')
        continue; // %r01 is not %r1
      long idx = std::strtol(name.c_str() + d, nullptr, 10);
      if (idx < fam->second.second)
        return fam->second.first + static_cast<int32_t>(idx);
    }
    return std::nullopt;
  }
};

} // namespace

// The operands of an instruction as written, and the parser of a function
// body: named in Decode.h, since OperandReader reads through them.
namespace flashc {
namespace sim {
namespace detail {

struct RawOperand {
  // One of: a token sequence for a scalar, or a vector of scalars, or an
  // address.
  // address, or a tensor operand `[map, {c0, c1, ...}]` (parts: the map's
  // address, then the coordinates).
  enum Kind { Scalar, Vector, Address, TensorAddress } kind = Scalar;
  std::vector<std::vector<const Token *>> parts; // scalars (vector: each)
  uint32_t line = 0;
};

class FunctionParser {
public:
  FunctionParser(Parser &parser, Program &prog, KernelProgram &kernel,
                 FunctionScope &scope)
      : prog(prog), kernel(kernel), scope(scope) {
    (void)parser;
  }
  Program &prog;
  KernelProgram &kernel;
  FunctionScope &scope;

  Status failAt(uint32_t line, const std::string &msg) const {
    return Status::make(ErrorCode::Parse, prog.sourceName + ":" +
                                              std::to_string(line) + ": " +
                                              msg);
  }

  /// A scalar operand: register, special register, immediate or symbol.
  Status scalar(const std::vector<const Token *> &toks, Ty type, Operand &out,
                uint32_t line) {
    if (toks.empty())
      return failAt(line, "empty operand");
    size_t i = 0;
    bool negate = false;
    if (toks[i]->is("!")) {
      negate = true;
      ++i;
    }
    bool minus = false;
    if (i < toks.size() && toks[i]->is("-")) {
      minus = true;
      ++i;
    }
    if (i == toks.size())
      return failAt(line, "nothing after '" + std::string(toks.back()->text) +
                              "' in an operand");
    if (i + 1 != toks.size())
      return failAt(line, "cannot parse operand '" +
                              std::string(toks[i]->text) + "...'");
    const Token &t = *toks[i];
    if (t.kind == Tok::Number) {
      out.kind = OperandKind::Imm;
      return immediate(t, type, minus, out, line);
    }
    if (minus)
      return failAt(line, "unexpected '-' before '" + std::string(t.text) + "'");
    std::string name(t.text);
    if (name == "_") {
      out.kind = OperandKind::Sink;
      return Status::success();
    }
    if (std::optional<int32_t> r = scope.lookupReg(name)) {
      out.kind = OperandKind::Reg;
      out.reg = *r;
      out.negate = negate;
      return Status::success();
    }
    if (name[0] == '%') {
      if (std::optional<Special> s = special(name)) {
        out.kind = OperandKind::Special;
        out.special = *s;
        return Status::success();
      }
      return failAt(line, "undeclared register '" + name + "'");
    }
    // Symbols: shared and local variables give their address in their
    // state space (nvcc's `mov.u64 %SPL, __local_depot0`).
    if (auto it = scope.sharedSymbols.find(name); it != scope.sharedSymbols.end()) {
      out.kind = OperandKind::Imm;
      out.imm = it->second;
      return Status::success();
    }
    if (auto it = scope.localSymbols.find(name); it != scope.localSymbols.end()) {
      out.kind = OperandKind::Imm;
      out.imm = it->second;
      return Status::success();
    }
    // A parameter's name is its address in the parameter space (nvcc's
    // `mov.b64 %rd, k_param_0` before `cvta.param` for a __grid_constant__
    // parameter).
    if (auto it = scope.paramSymbols.find(name);
        it != scope.paramSymbols.end()) {
      out.kind = OperandKind::Imm;
      out.imm = it->second;
      return Status::success();
    }
    return failAt(line, "unknown symbol '" + name + "'");
  }

  static std::optional<Special> special(const std::string &name) {
    static const std::pair<const char *, Special> table[] = {
        {"%tid.x", Special::TidX},
        {"%tid.y", Special::TidY},
        {"%tid.z", Special::TidZ},
        {"%ntid.x", Special::NtidX},
        {"%ntid.y", Special::NtidY},
        {"%ntid.z", Special::NtidZ},
        {"%ctaid.x", Special::CtaidX},
        {"%ctaid.y", Special::CtaidY},
        {"%ctaid.z", Special::CtaidZ},
        {"%nctaid.x", Special::NctaidX},
        {"%nctaid.y", Special::NctaidY},
        {"%nctaid.z", Special::NctaidZ},
        {"%laneid", Special::LaneId},
        {"%warpid", Special::WarpId},
        {"%nwarpid", Special::NWarpId},
        {"%smid", Special::SmId},
        {"%nsmid", Special::NSmId},
        {"%gridid", Special::GridId},
        {"%clock", Special::Clock},
        {"%clock64", Special::Clock64},
        {"%globaltimer", Special::GlobalTimer},
        {"%lanemask_eq", Special::LanemaskEq},
        {"%lanemask_lt", Special::LanemaskLt},
        {"%lanemask_le", Special::LanemaskLe},
        {"%lanemask_gt", Special::LanemaskGt},
        {"%lanemask_ge", Special::LanemaskGe},
        {"%dynamic_smem_size", Special::DynamicSmemSize},
        {"%total_smem_size", Special::TotalSmemSize}};
    for (auto &[n, s] : table)
      if (name == n)
        return s;
    return std::nullopt;
  }

  /// A literal's 64 bits, negated when written after a '-': as unsigned,
  /// so that -INT64_MIN wraps to itself.
  static uint64_t signedLiteral(int64_t value, bool negate) {
    uint64_t bits = static_cast<uint64_t>(value);
    return negate ? 0 - bits : bits;
  }

  Status immediate(const Token &t, Ty type, bool minus, Operand &out,
                   uint32_t line) {
    std::string_view s = t.text;
    auto bad = [&]() {
      return failAt(line, "bad immediate '" + std::string(s) + "'");
    };
    bool hexFloat32 = s.size() == 10 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F');
    bool hexFloat64 = s.size() == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D');
    if (hexFloat32 || hexFloat64) {
      std::optional<int64_t> bits =
          parseInteger("0x" + std::string(s.substr(2)));
      if (!bits)
        return bad();
      uint64_t b = static_cast<uint64_t>(*bits);
      if (hexFloat32) {
        float f;
        uint32_t b32 = static_cast<uint32_t>(b);
        std::memcpy(&f, &b32, 4);
        return floatImmediate(minus ? -static_cast<double>(f) : f, type, out,
                              line);
      }
      double d;
      std::memcpy(&d, &b, 8);
      return floatImmediate(minus ? -d : d, type, out, line);
    }
    bool isDecimalFloat = s.find('.') != std::string_view::npos ||
                          ((s.find('e') != std::string_view::npos ||
                            s.find('E') != std::string_view::npos) &&
                           !(s.size() > 1 && (s[1] == 'x' || s[1] == 'X')));
    if (isDecimalFloat) {
      std::string str(s);
      char *end = nullptr;
      double d = std::strtod(str.c_str(), &end);
      if (*end)
        return bad();
      return floatImmediate(minus ? -d : d, type, out, line);
    }
    std::optional<int64_t> v = parseInteger(s);
    if (!v)
      return bad();
    int64_t value = static_cast<int64_t>(signedLiteral(*v, minus));
    if (isFloat(type)) {
      // An integer literal in a float instruction is its value.
      return floatImmediate(static_cast<double>(value), type, out, line);
    }
    out.imm = static_cast<uint64_t>(value);
    return Status::success();
  }

  Status floatImmediate(double d, Ty type, Operand &out, uint32_t line) {
    if (type == Ty::F32) {
      float f = static_cast<float>(d);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      out.imm = b;
    } else if (type == Ty::F64) {
      std::memcpy(&out.imm, &d, 8);
    } else if (type == Ty::B32 || type == Ty::U32 || type == Ty::S32) {
      float f = static_cast<float>(d);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      out.imm = b;
    } else if (type == Ty::B64 || type == Ty::U64 || type == Ty::S64) {
      std::memcpy(&out.imm, &d, 8);
    } else {
      return failAt(line, "floating-point immediate for a ." +
                              std::string(stringify(type)) + " operand");
    }
    return Status::success();
  }

  /// `[reg]`, `[reg+imm]`, `[reg+-imm]`, `[sym]`, `[sym+imm]`, `[imm]`.
  Status address(const std::vector<const Token *> &toks, Space &space,
                 Operand &out, uint32_t line) {
    out.kind = OperandKind::Addr;
    out.reg = -1;
    out.imm = 0;
    size_t i = 0;
    bool first = true;
    while (i < toks.size()) {
      bool negative = false;
      if (!first) {
        if (!toks[i]->is("+"))
          return failAt(line, "bad address expression");
        ++i;
      }
      if (i < toks.size() && toks[i]->is("-")) {
        negative = true;
        ++i;
      }
      if (i >= toks.size())
        return failAt(line, "bad address expression");
      const Token &t = *toks[i++];
      if (t.kind == Tok::Number) {
        std::optional<int64_t> v = parseInteger(t.text);
        if (!v)
          return failAt(line, "bad address offset '" + std::string(t.text) + "'");
        out.imm += signedLiteral(*v, negative);
      } else if (t.kind == Tok::Ident && !negative) {
        std::string name(t.text);
        std::optional<int32_t> r = scope.lookupReg(name);
        if (name[0] == '%' || r) {
          if (!r || out.reg >= 0)
            return failAt(line, "bad address register '" + name + "'");
          out.reg = *r;
        } else if (auto it = scope.paramSymbols.find(name);
                   it != scope.paramSymbols.end()) {
          if (space != Space::Param)
            return failAt(line, "parameter '" + name +
                                    "' used outside ld.param");
          out.imm += it->second;
        } else if (auto it2 = scope.sharedSymbols.find(name);
                   it2 != scope.sharedSymbols.end()) {
          if (space == Space::Generic)
            return failAt(line, "a generic access to shared symbol '" + name +
                                    "' needs cvta");
          out.imm += it2->second;
        } else if (auto it3 = scope.localSymbols.find(name);
                   it3 != scope.localSymbols.end()) {
          if (space != Space::Local)
            return failAt(line, "local symbol '" + name +
                                    "' used outside ld/st.local");
          out.imm += it3->second;
        } else {
          return failAt(line, "unknown symbol '" + name + "' in an address");
        }
      } else {
        return failAt(line, "bad address expression");
      }
      first = false;
    }
    return Status::success();
  }

  Status instruction(const std::string &opcode,
                     const std::vector<RawOperand> &raw, int32_t guard,
                     bool guardNeg, uint32_t line);
};

} // namespace detail
} // namespace sim
} // namespace flashc

namespace {

/// Reads the operands of an instruction up to `;`.
Status readOperands(Parser &, std::vector<Token> &toks, size_t &pos,
                    std::vector<RawOperand> &out, const std::string &source) {
  auto fail = [&](uint32_t line, const std::string &msg) {
    return Status::make(ErrorCode::Parse,
                        source + ":" + std::to_string(line) + ": " + msg);
  };
  RawOperand cur;
  std::vector<const Token *> scalar;
  auto flushScalar = [&]() {
    if (!scalar.empty()) {
      cur.parts.push_back(scalar);
      scalar.clear();
    }
  };
  while (true) {
    const Token &t = toks[pos];
    if (t.kind == Tok::End)
      return fail(t.line, "unexpected end of input in an instruction");
    if (t.is(";")) {
      ++pos;
      if (!cur.parts.empty() || !scalar.empty() || !out.empty()) {
        flushScalar();
        if (cur.parts.empty())
          return fail(t.line, "empty operand");
        out.push_back(cur);
      }
      return Status::success();
    }
    cur.line = t.line;
    if (t.is("{")) {
      ++pos;
      cur.kind = RawOperand::Vector;
      while (true) {
        const Token &u = toks[pos];
        if (u.kind == Tok::End)
          return fail(u.line, "unterminated vector operand");
        ++pos;
        if (u.is("}"))
          break;
        if (u.is(",")) {
          flushScalar();
          continue;
        }
        scalar.push_back(&u);
      }
      flushScalar();
      continue;
    }
    if (t.is("[")) {
      ++pos;
      cur.kind = RawOperand::Address;
      bool inVector = false;
      while (true) {
        const Token &u = toks[pos];
        if (u.kind == Tok::End)
          return fail(u.line, "unterminated address operand");
        ++pos;
        if (u.is("]"))
          break;
        // `[map, {c0, c1}]`: a tensor operand.
        if (u.is(",")) {
          if (scalar.empty())
            return fail(u.line, "empty element in an address operand");
          flushScalar();
          cur.kind = RawOperand::TensorAddress;
          continue;
        }
        if (u.is("{") && cur.kind == RawOperand::TensorAddress && !inVector &&
            scalar.empty()) {
          inVector = true;
          continue;
        }
        if (u.is("}") && inVector) {
          inVector = false;
          continue;
        }
        scalar.push_back(&u);
      }
      if (cur.kind == RawOperand::TensorAddress && inVector)
        return fail(t.line, "unterminated coordinate vector in a tensor "
                            "operand");
      flushScalar();
      continue;
    }
    if (t.is(",")) {
      ++pos;
      flushScalar();
      if (cur.parts.empty())
        return fail(t.line, "empty operand");
      out.push_back(cur);
      cur = RawOperand();
      continue;
    }
    if (t.is("|")) {
      // setp/shfl's second destination: p|q
      ++pos;
      flushScalar();
      cur.kind = RawOperand::Vector;
      continue;
    }
    scalar.push_back(&t);
    ++pos;
  }
}

Status Parser::parseEntry() {
  next(); // .entry
  const Token &nameTok = next();
  if (nameTok.kind != Tok::Ident)
    return fail(nameTok, "expected a kernel name after .entry");
  KernelProgram kernel;
  kernel.info.name = std::string(nameTok.text);
  FunctionScope scope;
  scope.regScopes.emplace_back();
  scope.familyScopes.emplace_back();
  // Parameters.
  if (Status e = expect("("))
    return e;
  uint64_t paramOffset = 0;
  while (!peek().is(")")) {
    if (Status e = expect(".param"))
      return e;
    ParamInfo param;
    uint64_t align = 0;
    Ty elem = Ty::None;
    uint64_t count = 1;
    while (peek().kind == Tok::Ident && peek().text[0] == '.') {
      std::string_view d = next().text.substr(1);
      if (d == "align") {
        std::string_view text = next().text;
        std::optional<uint64_t> a = parseAlign(text);
        if (!a)
          return fail(peek(), "bad .align '" + std::string(text) + kBadAlign);
        align = *a;
      } else if (d == "ptr") {
        param.isPointer = true;
      } else if (d == "global" || d == "shared" || d == "const" ||
                 d == "local") {
        continue; // .ptr.global
      } else if (std::optional<Ty> t = parseType(d)) {
        elem = *t;
      } else {
        return fail(peek(), "unexpected '." + std::string(d) +
                                "' in a parameter");
      }
    }
    const Token &pname = next();
    if (pname.kind != Tok::Ident || elem == Ty::None)
      return fail(pname, "malformed parameter of '" + kernel.info.name + "'");
    while (consume("[")) {
      std::optional<int64_t> n = parseInteger(next().text);
      if (!n || *n <= 0)
        return fail(pname, "bad parameter array size");
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(*n), &count))
        count = UINT64_MAX; // too large below
      if (Status e = expect("]"))
        return e;
    }
    uint64_t size = sizeOf(elem), bytes;
    if (!align)
      align = size;
    // Offsets stay below kMaxParamBytes + kMaxAlign: no overflow.
    paramOffset = alignUp(paramOffset, align);
    if (__builtin_mul_overflow(size, count, &bytes) ||
        bytes > kMaxParamBytes - std::min(paramOffset, kMaxParamBytes))
      return fail(pname, "the parameters of '" + kernel.info.name +
                             "' take more than " +
                             std::to_string(kMaxParamBytes) + " bytes");
    param.name = std::string(pname.text);
    param.bytes = static_cast<uint32_t>(bytes);
    param.offset = static_cast<uint32_t>(paramOffset);
    param.isPointer |= (elem == Ty::U64 || elem == Ty::B64) && count == 1;
    paramOffset += param.bytes;
    scope.paramSymbols[param.name] = param.offset;
    kernel.info.params.push_back(param);
    if (!consume(","))
      break;
  }
  if (Status e = expect(")"))
    return e;
  kernel.paramBytes = static_cast<uint32_t>(paramOffset);
  // Performance directives.
  while (peek().kind == Tok::Ident && peek().text[0] == '.' &&
         !peek().is(".reg")) {
    std::string_view d = next().text;
    if (d == ".maxntid" || d == ".reqntid") {
      uint32_t v[3] = {1, 1, 1};
      for (int i = 0; i < 3; ++i) {
        std::optional<int64_t> n = parseInteger(next().text);
        if (!n || *n <= 0 || *n > kMaxBlockThreads)
          return fail(peek(), "bad " + std::string(d) + ": each size is 1 to " +
                                  std::to_string(kMaxBlockThreads));
        v[i] = static_cast<uint32_t>(*n);
        if (!consume(","))
          break;
      }
      Dim3 &dim = d == ".maxntid" ? kernel.info.maxBlock
                                  : kernel.info.requiredBlock;
      dim = Dim3{v[0], v[1], v[2]};
    } else if (d == ".minnctapersm" || d == ".maxnreg" ||
               d == ".maxnctapersm" || d == ".maxclusterrank") {
      next();
    } else if (d == ".noreturn") {
      continue;
    } else if (d == ".pragma") {
      while (!peek().is(";") && peek().kind != Tok::End)
        next();
      next();
    } else {
      return fail(peek(), "unexpected directive '" + std::string(d) +
                              "' before the body of '" + kernel.info.name +
                              "'");
    }
  }
  if (consume(";"))
    return Status::success(); // a declaration only
  if (!peek().is("{"))
    return fail(peek(), "expected the body of '" + kernel.info.name + "'");

  // Shared memory: the module's variables, then the kernel's.
  std::vector<std::pair<std::string, SharedVar>> shared = moduleShared;
  std::vector<std::pair<std::string, SharedVar>> locals;
  FunctionParser fp(*this, prog, kernel, scope);

  // Body.
  int depth = 0;
  bool layoutFrozen = false;
  // The shared layout is fixed at the first label or instruction: static
  // variables in declaration order, then the dynamic (extern) area.
  // Sizes are at most kMaxVariableBytes and alignments kMaxAlign, so the
  // 64-bit sums below cannot overflow before they are checked.
  auto freezeLayout = [&](const Token &at) -> Status {
    if (layoutFrozen)
      return Status::success();
    layoutFrozen = true;
    uint64_t off = 0, dynAlign = 16;
    for (auto &[name, var] : shared) {
      if (var.isExtern) {
        dynAlign = std::max(dynAlign, var.align);
        continue;
      }
      off = alignUp(off, var.align);
      scope.sharedSymbols[name] = off;
      off += var.bytes;
      if (off > kMaxVariableBytes)
        return fail(at, "the shared variables of '" + kernel.info.name +
                            "' take more than " +
                            std::to_string(kMaxVariableBytes) + " bytes");
    }
    kernel.info.staticSharedBytes = static_cast<uint32_t>(off);
    kernel.dynamicSharedOffset = static_cast<uint32_t>(alignUp(off, dynAlign));
    for (auto &[name, var] : shared)
      if (var.isExtern)
        scope.sharedSymbols[name] = kernel.dynamicSharedOffset;
    return Status::success();
  };
  while (true) {
    const Token &t = peek();
    if (t.kind == Tok::End)
      return fail(t, "unterminated body of '" + kernel.info.name + "'");
    if (t.is("{")) {
      next();
      ++depth;
      if (depth > 1) {
        scope.regScopes.emplace_back();
        scope.familyScopes.emplace_back();
        scope.blockParent.push_back(scope.openBlocks.back());
        scope.openBlocks.push_back(
            static_cast<uint32_t>(scope.blockParent.size() - 1));
      }
      continue;
    }
    if (t.is("}")) {
      next();
      --depth;
      if (depth == 0)
        break;
      scope.regScopes.pop_back();
      scope.familyScopes.pop_back();
      scope.openBlocks.pop_back();
      continue;
    }
    if (t.is(".loc") || t.is(".file")) {
      skipLine();
      continue;
    }
    if (t.is(".pragma")) {
      while (!peek().is(";") && peek().kind != Tok::End)
        next();
      next();
      continue;
    }
    if (t.is(".reg")) {
      next();
      Ty type = Ty::None;
      while (peek().kind == Tok::Ident && peek().text[0] == '.') {
        std::string_view d = next().text.substr(1);
        if (std::optional<Ty> ty = parseType(d))
          type = *ty;
        else if (d == "v2" || d == "v4")
          return fail(t, "vector registers are not supported");
        else
          return fail(t, "unexpected '." + std::string(d) + "' in .reg");
      }
      if (type == Ty::None)
        return fail(t, ".reg without a type");
      while (true) {
        const Token &name = next();
        // Inline assembly declares names without `%` (`.reg .pred p;`).
        if (name.kind != Tok::Ident || name.text[0] == '.' ||
            name.text[0] == '$')
          return fail(name, "expected a register name in .reg");
        std::string n(name.text);
        int64_t count = 1;
        bool family = consume("<");
        if (family) {
          std::optional<int64_t> c = parseInteger(next().text);
          if (!c || *c < 0)
            return fail(name, "bad register count");
          if (Status e = expect(">"))
            return e;
          count = *c;
        }
        if (static_cast<uint64_t>(count) > kMaxRegisters - kernel.numRegs)
          return fail(name, "kernel '" + kernel.info.name +
                                "' declares more than " +
                                std::to_string(kMaxRegisters) + " registers");
        int32_t first = static_cast<int32_t>(kernel.numRegs);
        if (family)
          scope.familyScopes.back()[n] = {first, static_cast<int32_t>(count)};
        else
          scope.regScopes.back()[n] = first;
        scope.regTypes.resize(scope.regTypes.size() + count, type);
        kernel.numRegs += static_cast<uint32_t>(count);
        if (!consume(","))
          break;
      }
      if (Status e = expect(";"))
        return e;
      continue;
    }
    if (t.is(".shared") || t.is(".local")) {
      bool isShared = t.is(".shared");
      next();
      std::vector<std::pair<std::string, SharedVar>> &dst =
          isShared ? shared : locals;
      if (Status e =
              parseVarDecl(isShared ? Space::Shared : Space::Local, false, &dst,
                           isShared ? nullptr : &kernel.localBytes))
        return e;
      if (isShared && layoutFrozen)
        return fail(t, "a .shared declaration after the first instruction of '" +
                           kernel.info.name + "'");
      if (!isShared) {
        // As for shared memory: no overflow before the check.
        uint64_t off = 0;
        for (auto &[name, var] : locals) {
          off = alignUp(off, var.align);
          scope.localSymbols[name] = off;
          off += var.bytes;
          if (off > kMaxVariableBytes)
            return fail(t, "the local variables of '" + kernel.info.name +
                               "' take more than " +
                               std::to_string(kMaxVariableBytes) + " bytes");
        }
        kernel.localBytes = static_cast<uint32_t>(off);
      }
      continue;
    }
    if (t.kind == Tok::Ident && t.text[0] == '.')
      return fail(t, "unsupported directive '" + std::string(t.text) +
                         "' in the body of '" + kernel.info.name + "'");
    if (Status e = freezeLayout(t))
      return e;
    // A label?
    if (t.kind == Tok::Ident && peek(1).is(":")) {
      std::string label(t.text);
      next();
      next();
      auto key = std::make_pair(scope.openBlocks.back(), label);
      if (scope.labels.count(key))
        return fail(t, "label '" + label + "' defined twice");
      scope.labels[key] = static_cast<uint32_t>(kernel.code.size());
      continue;
    }
    // An instruction, maybe guarded.
    int32_t guard = -1;
    bool guardNeg = false;
    uint32_t line = t.line;
    if (consume("@")) {
      if (consume("!"))
        guardNeg = true;
      const Token &p = next();
      std::optional<int32_t> r = scope.lookupReg(std::string(p.text));
      if (!r || scope.regTypes[*r] != Ty::Pred)
        return fail(p, "bad guard predicate '" + std::string(p.text) + "'");
      guard = *r;
    }
    const Token &opTok = next();
    if (opTok.kind != Tok::Ident)
      return fail(opTok, "expected an instruction, found '" +
                             std::string(opTok.text) + "'");
    std::string opcode(opTok.text);
    std::vector<RawOperand> raw;
    if (Status e = readOperands(*this, toks, pos, raw, prog.sourceName))
      return e;
    if (Status e = fp.instruction(opcode, raw, guard, guardNeg, line))
      return e;
  }

  if (Status e = freezeLayout(peek()))
    return e;
  // Resolve branches.
  for (auto &[index, label, line, block] : scope.pendingBranches) {
    // The innermost enclosing block that defines the label.
    auto it = scope.labels.end();
    for (uint32_t b = block;; b = scope.blockParent[b]) {
      it = scope.labels.find({b, label});
      if (it != scope.labels.end() || b == 0)
        break;
    }
    if (it == scope.labels.end())
      return Status::make(ErrorCode::Parse,
                          prog.sourceName + ":" + std::to_string(line) +
                              ": unknown label '" + label + "'");
    kernel.code[index].target = it->second;
  }
  // A body that falls off its end returns.
  Inst ret;
  ret.op = Op::Exit;
  ret.line = toks[pos > 0 ? pos - 1 : 0].line;
  kernel.code.push_back(ret);

  prog.kernels.push_back(std::move(kernel));
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Operand decoding
//===----------------------------------------------------------------------===//

OperandReader::OperandReader(FunctionParser &parser, const std::string &opcode,
                             const std::vector<RawOperand> &raw, uint32_t line)
    : parser(parser), op(opcode), raw(raw), line(line) {}

size_t OperandReader::size() const { return raw.size(); }

bool OperandReader::isScalar(size_t i) const {
  return raw[i].kind == RawOperand::Scalar;
}

bool OperandReader::isVector(size_t i) const {
  return raw[i].kind == RawOperand::Vector;
}

size_t OperandReader::vectorSize(size_t i) const { return raw[i].parts.size(); }

Status OperandReader::count(size_t lo, size_t hi) const {
  if (raw.size() < lo || raw.size() > hi)
    return bad("expected " + std::to_string(lo) +
               (hi != lo ? "-" + std::to_string(hi) : std::string()) +
               " operands, found " + std::to_string(raw.size()));
  return Status::success();
}

Status OperandReader::bad(const std::string &what) const {
  return parser.failAt(line, "'" + op + "': " + what);
}

Status OperandReader::addScalar(size_t i, Ty type) {
  const RawOperand &r = raw[i];
  if (r.kind != RawOperand::Scalar || r.parts.size() != 1)
    return bad("expected a scalar operand");
  Operand o;
  if (Status e = parser.scalar(r.parts[0], type, o, line))
    return e;
  ops.push_back(o);
  return Status::success();
}

Status OperandReader::addReg(size_t i, Ty type) {
  if (Status e = addScalar(i, type))
    return e;
  if (ops.back().kind != OperandKind::Reg &&
      ops.back().kind != OperandKind::Sink)
    return bad("expected a register destination");
  return Status::success();
}

Status OperandReader::addVector(size_t i, Ty type, size_t n, bool dest) {
  const RawOperand &r = raw[i];
  if (r.kind != RawOperand::Vector || r.parts.size() != n)
    return bad("expected a vector of " + std::to_string(n) + " operands");
  for (auto &part : r.parts) {
    Operand o;
    if (Status e = parser.scalar(part, type, o, line))
      return e;
    if (dest && o.kind != OperandKind::Reg && o.kind != OperandKind::Sink)
      return bad("expected registers in a destination vector");
    ops.push_back(o);
  }
  return Status::success();
}

Status OperandReader::addAddr(size_t i, Space space) {
  const RawOperand &r = raw[i];
  if (r.kind != RawOperand::Address || r.parts.size() != 1)
    return bad("expected an address operand");
  Operand o;
  if (Status e = parser.address(r.parts[0], space, o, line))
    return e;
  ops.push_back(o);
  return Status::success();
}

bool OperandReader::isTensorAddress(size_t i) const {
  return raw[i].kind == RawOperand::TensorAddress;
}

Status OperandReader::addTensorAddress(size_t i, size_t rank) {
  const RawOperand &r = raw[i];
  if (r.kind != RawOperand::TensorAddress || r.parts.size() != rank + 1)
    return bad("expected a tensor operand [map, {" + std::to_string(rank) +
               " coordinates}]");
  Operand map;
  Space generic = Space::Generic;
  if (Status e = parser.address(r.parts[0], generic, map, line))
    return e;
  ops.push_back(map);
  for (size_t c = 1; c <= rank; ++c) {
    Operand o;
    if (Status e = parser.scalar(r.parts[c], Ty::S32, o, line))
      return e;
    ops.push_back(o);
  }
  return Status::success();
}

void OperandReader::addSink() {
  Operand sink;
  sink.kind = OperandKind::Sink;
  ops.push_back(sink);
}

Status OperandReader::readScalar(size_t i, Ty type, Operand &out) const {
  return parser.scalar(raw[i].parts[0], type, out, line);
}

Status OperandReader::addLabel(size_t i) {
  const RawOperand &r = raw[i];
  if (r.kind != RawOperand::Scalar || r.parts[0].size() != 1)
    return bad("expected a label");
  parser.scope.pendingBranches.emplace_back(
      parser.kernel.code.size(), std::string(r.parts[0][0]->text), line,
      parser.scope.openBlocks.back());
  return Status::success();
}

bool OperandReader::isPredicate(const Operand &o) const {
  return o.kind == OperandKind::Reg && parser.scope.regTypes[o.reg] == Ty::Pred;
}

Status FunctionParser::instruction(const std::string &opcode,
                                   const std::vector<RawOperand> &raw,
                                   int32_t guard, bool guardNeg,
                                   uint32_t line) {
  Inst inst;
  inst.line = line;
  inst.guard = guard;
  inst.guardNegated = guardNeg;
  std::string why = decodeOpcode(opcode, inst);
  if (!why.empty())
    return Status::make(ErrorCode::Unsupported,
                        prog.sourceName + ":" + std::to_string(line) + ": " +
                            why + " '" + opcode + "' in kernel '" +
                            kernel.info.name + "'");
  prog.opcodes.insert(opcode);
  auto found = std::find(kernel.opcodeNames.begin(), kernel.opcodeNames.end(),
                         opcode);
  inst.opcodeIndex = static_cast<uint32_t>(found - kernel.opcodeNames.begin());
  if (found == kernel.opcodeNames.end())
    kernel.opcodeNames.push_back(opcode);

  OperandReader reader(*this, opcode, raw, line);
  Status e;
  switch (inst.op) {
#define FLASHC_SIM_OP(Name, Description)                                       \
  case Op::Name:                                                               \
    e = Description::operands(reader, inst);                                   \
    break;
#include "Instructions.def"
  }
  if (e)
    return e;
  const std::vector<Operand> &ops = reader.operands();
  inst.firstOp = static_cast<uint32_t>(kernel.operands.size());
  inst.numOps = static_cast<uint8_t>(ops.size());
  kernel.operands.insert(kernel.operands.end(), ops.begin(), ops.end());
  kernel.code.push_back(inst);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

std::string flashc::sim::escapeText(std::string_view text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out.push_back(c);
      continue;
    }
    out += "\\x";
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

Module::~Module() = default;

/// `e` with its message escaped for printing (the text it quotes is the
/// input's).
static Status escaped(const Status &e) {
  return Status::make(e.code(), escapeText(e.message()));
}

Result<std::shared_ptr<const Module>> Module::parse(std::string_view ptx,
                                                    std::string sourceName) {
  try {
    std::vector<Token> tokens;
    auto program = std::make_unique<Program>();
    program->sourceName = sourceName;
    if (Status e = tokenize(ptx, sourceName, tokens))
      return escaped(e);
    Parser parser(tokens, *program);
    if (Status e = parser.parseModule())
      return escaped(e);
    std::shared_ptr<Module> module(new Module());
    module->program = std::move(program);
    return std::shared_ptr<const Module>(std::move(module));
  } catch (const std::bad_alloc &) {
    return Status::make(ErrorCode::Limit,
                        escapeText(sourceName) + ": out of memory parsing " +
                            std::to_string(ptx.size()) + " bytes of PTX");
  }
}

std::vector<std::string> Module::kernelNames() const {
  std::vector<std::string> names;
  for (const KernelProgram &k : program->kernels)
    names.push_back(k.info.name);
  return names;
}

const KernelInfo *Module::getKernel(std::string_view name) const {
  for (const KernelProgram &k : program->kernels)
    if (k.info.name == name)
      return &k.info;
  return nullptr;
}

const std::set<std::string> &Module::getOpcodes() const {
  return program->opcodes;
}

const std::string &Module::getSourceName() const {
  return program->sourceName;
}

bool flashc::sim::isSupportedOpcode(std::string_view opcode) {
  Inst inst;
  return decodeOpcode(opcode, inst).empty();
}

static Result<std::set<std::string>> listOpcodesOf(std::string_view ptx) {
  std::vector<Token> tokens;
  if (Status e = tokenize(ptx, "<ptx>", tokens))
    return escaped(e);
  // An opcode is the first identifier of a statement inside a body: after
  // `{`, `}`, `;` or a label, skipping guards and directives.
  std::set<std::string> ops;
  int depth = 0;
  bool atStart = false;
  bool inStatement = false; // between an opcode and its `;`
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token &t = tokens[i];
    if (inStatement) {
      if (t.is(";")) {
        inStatement = false;
        atStart = true;
      }
      continue; // operands, vector braces included
    }
    if (t.is("{")) {
      ++depth;
      atStart = true;
      continue;
    }
    if (t.is("}")) {
      --depth;
      atStart = true;
      continue;
    }
    if (t.is(";")) {
      atStart = true;
      continue;
    }
    if (depth <= 0 || !atStart)
      continue;
    if (t.is("@")) {
      // @%p or @!%p
      i += tokens[i + 1].is("!") ? 2 : 1;
      continue;
    }
    if (t.kind == Tok::Ident && i + 1 < tokens.size() &&
        tokens[i + 1].is(":") && t.text[0] != '.') {
      ++i; // label
      continue;
    }
    if (t.kind == Tok::Ident && t.text[0] == '.') {
      atStart = false; // a declaration, up to its `;`
      if (t.is(".loc") || t.is(".file")) {
        // Line-terminated: skip the rest of the line.
        while (i + 1 < tokens.size() && tokens[i + 1].line == t.line)
          ++i;
        atStart = true;
      }
      continue;
    }
    if (t.kind == Tok::Ident) {
      ops.insert(std::string(t.text));
      inStatement = true;
    }
    atStart = false;
  }
  return ops;
}

Result<std::set<std::string>> flashc::sim::listOpcodes(std::string_view ptx) {
  try {
    return listOpcodesOf(ptx);
  } catch (const std::bad_alloc &) {
    return Status::make(ErrorCode::Limit,
                        "out of memory listing the opcodes of " +
                            std::to_string(ptx.size()) + " bytes of PTX");
  }
}
