// emit.h: the emitters of idlc. Each reads only the model and returns file contents;
// output.cpp decides where (and whether) they are written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diag.h"
#include "model.h"

namespace idlc {

// The encoded interface descriptor of each function, in module order. Returns false
// (with errors in DIAG) if a descriptor cannot be encoded (a limit is exceeded).
bool encodeDescriptors(const model::Module &mod, std::vector<std::vector<uint8_t>> &out, Diag &diag);

// The module bundle (.gdesc) holding every descriptor.
std::vector<uint8_t> emitDescriptorBundle(const std::vector<std::vector<uint8_t>> &descs);

// The server stub C source. OUTNAME is the file name it will be written as (for #line).
std::string emitStub(const model::Module &mod, const std::vector<std::vector<uint8_t>> &descs,
                     const std::string &outName);

// The typed client header: one inline wrapper over grid_call per function.
std::string emitClientHeader(const model::Module &mod, const std::string &outName);

// The C type of a parameter's elements ("double", "unsigned int", "char *").
std::string cElementType(const model::Param &p);

} // namespace idlc
