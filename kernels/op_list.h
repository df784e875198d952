#pragma once
// How the op list (kernels/ops.inc) becomes code. Each entry names an op and its parameters as
// (type, name) pairs, where T is the working precision's element type (and Y an output's, T or
// float). Three places expand the list:
//   - each backend's `struct Kernels` (kernels/declare_kernels.inc): static members on typed
//     pointers, T a template parameter, plus an `Exec` that says where the work runs;
//   - the Backend interface (kernels/backend.h): one pure virtual per op, where a T* is a Ref and
//     a const T* a CRef (ops::erased_t, kernels/op_signature.h);
//   - KernelBackend (kernels/kernel_backend.h): each virtual picks T from a Ref's dtype and calls
//     that instantiation (ops::kernel_arg turns each Ref back into its typed pointer).
// This header is only macros and is safe for nvcc; kernels/op_signature.h holds the C++ side
// (it needs src/core/typed_ref.h, which nvcc does not compile).

// ZT_OP_MAP(F, SEP, (type, name), ...) expands to F(type, name) SEP() F(type, name) ..., for up to
// 16 pairs. SEP is ZT_OP_COMMA or ZT_OP_NOTHING.
#define ZT_OP_COMMA() ,
#define ZT_OP_NOTHING()
#define ZT_OP_MAP(F, SEP, ...)                                                                 \
  ZT_OP_MAP_PICK(__VA_ARGS__, ZT_OP_MAP16, ZT_OP_MAP15, ZT_OP_MAP14, ZT_OP_MAP13, ZT_OP_MAP12, \
                 ZT_OP_MAP11, ZT_OP_MAP10, ZT_OP_MAP9, ZT_OP_MAP8, ZT_OP_MAP7, ZT_OP_MAP6,     \
                 ZT_OP_MAP5, ZT_OP_MAP4, ZT_OP_MAP3, ZT_OP_MAP2, ZT_OP_MAP1, )                 \
  (F, SEP, __VA_ARGS__)
#define ZT_OP_MAP_PICK(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, M, \
                       ...)                                                                      \
  M
#define ZT_OP_MAP1(F, S, a) F a
#define ZT_OP_MAP2(F, S, a, ...) F a S() ZT_OP_MAP1(F, S, __VA_ARGS__)
#define ZT_OP_MAP3(F, S, a, ...) F a S() ZT_OP_MAP2(F, S, __VA_ARGS__)
#define ZT_OP_MAP4(F, S, a, ...) F a S() ZT_OP_MAP3(F, S, __VA_ARGS__)
#define ZT_OP_MAP5(F, S, a, ...) F a S() ZT_OP_MAP4(F, S, __VA_ARGS__)
#define ZT_OP_MAP6(F, S, a, ...) F a S() ZT_OP_MAP5(F, S, __VA_ARGS__)
#define ZT_OP_MAP7(F, S, a, ...) F a S() ZT_OP_MAP6(F, S, __VA_ARGS__)
#define ZT_OP_MAP8(F, S, a, ...) F a S() ZT_OP_MAP7(F, S, __VA_ARGS__)
#define ZT_OP_MAP9(F, S, a, ...) F a S() ZT_OP_MAP8(F, S, __VA_ARGS__)
#define ZT_OP_MAP10(F, S, a, ...) F a S() ZT_OP_MAP9(F, S, __VA_ARGS__)
#define ZT_OP_MAP11(F, S, a, ...) F a S() ZT_OP_MAP10(F, S, __VA_ARGS__)
#define ZT_OP_MAP12(F, S, a, ...) F a S() ZT_OP_MAP11(F, S, __VA_ARGS__)
#define ZT_OP_MAP13(F, S, a, ...) F a S() ZT_OP_MAP12(F, S, __VA_ARGS__)
#define ZT_OP_MAP14(F, S, a, ...) F a S() ZT_OP_MAP13(F, S, __VA_ARGS__)
#define ZT_OP_MAP15(F, S, a, ...) F a S() ZT_OP_MAP14(F, S, __VA_ARGS__)
#define ZT_OP_MAP16(F, S, a, ...) F a S() ZT_OP_MAP15(F, S, __VA_ARGS__)

// A kernel's parameter followed by a comma (Exec comes last).
#define ZT_OP_KERNEL_PARAM(type, name) type name,

namespace zt {
// The gemm kernel takes typed references (kernels/ops.inc); declared here so that a kernel class
// can be declared where src/core/typed_ref.h cannot be included (CUDA sources).
struct Ref;
struct CRef;
}  // namespace zt
