#pragma once
// The C++ side of the op list's expansions into the Backend interface and KernelBackend
// (kernels/op_list.h): the Backend's type of each kernel parameter, and the kernel's argument
// from the Backend's.
#include <type_traits>

#include "kernels/op_list.h"
#include "src/core/typed_ref.h"

// A Backend parameter; the argument KernelBackend passes the kernel, followed by a comma (Exec
// comes last).
#define ZT_OP_BACKEND_PARAM(type, name) ::zt::ops::erased_t<type> name
#define ZT_OP_KERNEL_ARG(type, name) ::zt::ops::kernel_arg<type>(name),

namespace zt::ops {

// What T and Y stand for in the Backend's signatures.
struct Working;

// The Backend's type of a kernel parameter: a Ref for a T*, a CRef for a const T*, else itself.
template <class P>
struct Erased {
  using type = P;
};
template <>
struct Erased<Working*> {
  using type = Ref;
};
template <>
struct Erased<const Working*> {
  using type = CRef;
};
template <class P>
using erased_t = typename Erased<P>::type;

// The kernel's argument of type P from the Backend's: a typed reference checked against P's
// element type (Ref::as), anything else as it is.
template <class P, class A>
P kernel_arg(A&& a) {
  using Arg = std::remove_cvref_t<A>;
  if constexpr (std::is_pointer_v<P> && (std::is_same_v<Arg, Ref> || std::is_same_v<Arg, CRef>))
    return a.template as<std::remove_const_t<std::remove_pointer_t<P>>>();
  else
    return static_cast<A&&>(a);
}

}  // namespace zt::ops
