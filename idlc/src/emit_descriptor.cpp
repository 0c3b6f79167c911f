// emit_descriptor.cpp: model -> interface descriptors (docs/descriptor.md). The
// encoding itself is the runtime's (grd_encode), so idlc, client and server share one
// implementation of the format and cannot drift apart.
#include <cstdlib>
#include <memory>

#include "emit.h"
#include "grd_desc.h"

namespace idlc {

namespace {

using model::Expr;

// The model's enums are cast straight to descriptor codes below (and the public
// grid_type_np etc. equal those, checked in runtime/client/grc_api.c): a renumbering on
// either side must fail to compile rather than change the wire format.
#define IDLC_SAME_(m, g) static_assert(static_cast<uint32_t>(m) == (g), #m " != " #g)
IDLC_SAME_(model::Type::Char, GRD_CHAR);
IDLC_SAME_(model::Type::Short, GRD_SHORT);
IDLC_SAME_(model::Type::Int, GRD_INT);
IDLC_SAME_(model::Type::Long, GRD_LONG);
IDLC_SAME_(model::Type::LongLong, GRD_LONGLONG);
IDLC_SAME_(model::Type::Float, GRD_FLOAT);
IDLC_SAME_(model::Type::Double, GRD_DOUBLE);
IDLC_SAME_(model::Type::SComplex, GRD_SCOMPLEX);
IDLC_SAME_(model::Type::DComplex, GRD_DCOMPLEX);
IDLC_SAME_(model::Type::String, GRD_STRING);
IDLC_SAME_(model::Type::Filename, GRD_FILENAME);
IDLC_SAME_(model::Type::Callback, GRD_CALLBACK);
IDLC_SAME_(model::Mode::In, GRD_IN);
IDLC_SAME_(model::Mode::Out, GRD_OUT);
IDLC_SAME_(model::Mode::InOut, GRD_INOUT);
IDLC_SAME_(model::Mode::Work, GRD_WORK);
IDLC_SAME_(model::Language::C, GRD_LANG_C);
IDLC_SAME_(model::Language::Cxx, GRD_LANG_CXX);
IDLC_SAME_(model::Language::Fortran, GRD_LANG_FORTRAN);
#undef IDLC_SAME_

grd_op opcode(Expr::Op op) {
    switch (op) {
    case Expr::Const: return GRD_OP_CONST;
    case Expr::Param: return GRD_OP_PARAM;
    case Expr::Add: return GRD_OP_ADD;
    case Expr::Sub: return GRD_OP_SUB;
    case Expr::Mul: return GRD_OP_MUL;
    case Expr::Div: return GRD_OP_DIV;
    case Expr::Mod: return GRD_OP_MOD;
    case Expr::Pow: return GRD_OP_POW;
    case Expr::Neg: return GRD_OP_NEG;
    case Expr::Lt: return GRD_OP_LT;
    case Expr::Le: return GRD_OP_LE;
    case Expr::Gt: return GRD_OP_GT;
    case Expr::Ge: return GRD_OP_GE;
    case Expr::Eq: return GRD_OP_EQ;
    case Expr::Ne: return GRD_OP_NE;
    case Expr::And: return GRD_OP_AND;
    case Expr::Or: return GRD_OP_OR;
    case Expr::Not: return GRD_OP_NOT;
    case Expr::Cond: return GRD_OP_COND;
    case Expr::Min: return GRD_OP_MIN;
    case Expr::Max: return GRD_OP_MAX;
    case Expr::CbParam: return GRD_OP_CBPARAM;
    }
    return GRD_OP_CONST;
}

// Postfix order: operands first, then the operator.
void compile(const Expr &e, std::vector<grd_insn> &code) {
    for (const auto &a : e.args)
        compile(a, code);
    grd_insn in{};
    in.op = opcode(e.op);
    if (e.op == Expr::Const) in.operand = e.value;
    if (e.op == Expr::Param || e.op == Expr::CbParam) in.operand = e.param;
    code.push_back(in);
}

// Owns the instruction arrays that a grd_desc points into.
struct Programs {
    std::vector<std::unique_ptr<std::vector<grd_insn>>> store;
    grd_expr make(const Expr *e) {
        grd_expr out{0, nullptr};
        if (!e) return out;
        store.push_back(std::make_unique<std::vector<grd_insn>>());
        compile(*e, *store.back());
        out.len = static_cast<uint32_t>(store.back()->size());
        out.code = store.back()->data();
        return out;
    }
};

// Owns the parameter and dimension arrays a grd_desc points into.
struct ParamStore {
    std::vector<std::unique_ptr<std::vector<grd_param>>> params;
    std::vector<std::unique_ptr<std::vector<grd_dim>>> dims;

    grd_param *make(const std::vector<model::Param> &ps, Programs &progs) {
        if (ps.empty()) return nullptr;
        params.push_back(std::make_unique<std::vector<grd_param>>(ps.size()));
        std::vector<grd_param> &out = *params.back();
        for (size_t i = 0; i < ps.size(); ++i) {
            const auto &p = ps[i];
            dims.push_back(std::make_unique<std::vector<grd_dim>>());
            for (const auto &d : p.dims) {
                grd_dim gd;
                gd.size = progs.make(&d.size);
                gd.start = progs.make(d.start ? &*d.start : nullptr);
                gd.end = progs.make(d.end ? &*d.end : nullptr);
                gd.step = progs.make(d.step ? &*d.step : nullptr);
                dims.back()->push_back(gd);
            }
            grd_param &gp = out[i];
            gp = grd_param{};
            gp.name = const_cast<char *>(p.name.c_str());
            gp.type = static_cast<uint32_t>(p.type);
            gp.mode = static_cast<uint32_t>(p.mode);
            gp.flags = (p.isUnsigned ? GRD_PF_UNSIGNED : 0u) | (p.pointer ? GRD_PF_POINTER : 0u);
            gp.rank = static_cast<uint32_t>(p.dims.size());
            gp.dims = dims.back()->empty() ? nullptr : dims.back()->data();
            gp.ncb = static_cast<uint32_t>(p.cb.size());
            gp.cb = make(p.cb, progs);
        }
        return out.data();
    }
};

} // namespace

bool encodeDescriptors(const model::Module &mod, std::vector<std::vector<uint8_t>> &out, Diag &diag) {
    bool ok = true;
    for (const auto &f : mod.functions) {
        Programs progs;
        ParamStore store;
        grd_param *params = store.make(f.params, progs);
        grd_desc d{};
        d.version = GRD_FORMAT_VERSION;
        d.module = const_cast<char *>(mod.name.c_str());
        d.name = const_cast<char *>(f.name.c_str());
        d.description = const_cast<char *>(f.description.c_str());
        d.flags = (f.shrink ? GRD_FF_SHRINK : 0u) | (f.noRetry ? GRD_FF_NO_RETRY : 0u) |
                  (f.cls.empty() ? 0u : GRD_FF_METHOD) | (f.timeout ? GRD_FF_TIMEOUT : 0u);
        d.timeout = f.timeout;
        d.cls = f.cls.empty() ? nullptr : const_cast<char *>(f.cls.c_str());
        d.language = static_cast<uint32_t>(f.language);
        d.cost = progs.make(f.cost ? &*f.cost : nullptr);
        d.nparams = static_cast<uint32_t>(f.params.size());
        d.params = params;
        uint8_t *buf = nullptr;
        size_t len = 0;
        grd_error err{};
        if (grd_encode(&d, &buf, &len, &err) != GRD_OK) {
            diag.error(f.loc, "cannot build the interface descriptor of " + f.name + ": " + err.msg);
            ok = false;
            out.emplace_back();
            continue;
        }
        out.emplace_back(buf, buf + len);
        free(buf);
    }
    return ok;
}

std::vector<uint8_t> emitDescriptorBundle(const std::vector<std::vector<uint8_t>> &descs) {
    std::vector<const uint8_t *> ptrs;
    std::vector<size_t> lens;
    for (const auto &d : descs) {
        ptrs.push_back(d.data());
        lens.push_back(d.size());
    }
    uint8_t *buf = nullptr;
    size_t len = 0;
    grd_error err{};
    if (grd_bundle_encode(ptrs.data(), lens.data(), static_cast<uint32_t>(descs.size()), &buf, &len, &err) !=
        GRD_OK)
        return {};
    std::vector<uint8_t> out(buf, buf + len);
    free(buf);
    return out;
}

} // namespace idlc
