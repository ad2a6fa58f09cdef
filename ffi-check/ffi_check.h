// gpukernel: the definitions of declare_device! functions checked against the declarations.
// Compiled after a foreign source; needs no header (no <cstdint>, no <type_traits>). Each
// type is reduced to what the ABI sees: bool, a signed or unsigned integer or a float of N
// bytes, a pointer to such a description, a class of N bytes; so `int` and `int32_t`,
// `long` and `long long` on LP64, `const float*` and `float*` describe alike.
// The check's own words are the language's, whatever macros the source defined.
#ifdef static_assert
#undef static_assert
#endif
#ifdef decltype
#undef decltype
#endif
#ifdef sizeof
#undef sizeof
#endif
#ifdef alignof
#undef alignof
#endif
#ifdef static_cast
#undef static_cast
#endif
#ifdef __builtin_offsetof
#undef __builtin_offsetof
#endif
#ifdef __INTADDR__
#undef __INTADDR__
#endif
#ifdef __is_class
#undef __is_class
#endif
#ifdef __builtin_bit_cast
#undef __builtin_bit_cast
#endif
#ifdef __gpukernel_ffi
#undef __gpukernel_ffi
#endif
namespace __gpukernel_ffi {
struct k_none {};       // void; a missing parameter
struct k_other {};      // a type the ABI of declare_device! has no counterpart for
struct k_any_class {};  // a declared struct, whose C name and size the record does not give
template <int B> struct k_half {};  // f16 (0) / bf16 (1): by value their bits (unsigned short); as a field also CUDA's class, pointed to also a 2-byte class
template <int B> struct k_half_class {};  // CUDA's __half (0) / __nv_bfloat16 (1), not any other 2-byte class
template <int Kind, unsigned long Size> struct k_scalar {};  // 1 bool, 2 signed, 3 unsigned, 4 float
template <unsigned long Size> struct k_class {};
template <class P> struct k_ptr {};
template <class T> struct k_bare { typedef T type; };
template <class T> struct k_bare<const T> { typedef T type; };
template <class T> struct k_bare<volatile T> { typedef T type; };
template <class T> struct k_bare<const volatile T> { typedef T type; };
// An array element's probe type is a reference (`decltype(p->v[0])`).
template <class T> struct k_bare<T&> { typedef typename k_bare<T>::type type; };
template <class T> struct k_int { typedef k_scalar<(T(0) < T(-1)) ? 3 : 2, sizeof(T)> type; };
template <class T, bool IsClass = __is_class(T)> struct k_of { typedef k_other type; };
template <class T> struct k_of<T, true> { typedef k_class<sizeof(T)> type; };
template <class T> struct k_of<T*, false> {
  typedef k_ptr<typename k_of<typename k_bare<T>::type>::type> type;
};
template <> struct k_of<void, false> { typedef k_none type; };
template <> struct k_of<bool, false> { typedef k_scalar<1, 1> type; };
template <> struct k_of<float, false> { typedef k_scalar<4, 4> type; };
template <> struct k_of<double, false> { typedef k_scalar<4, 8> type; };
template <> struct k_of<char, false> : k_int<char> {};
template <> struct k_of<signed char, false> : k_int<signed char> {};
template <> struct k_of<unsigned char, false> : k_int<unsigned char> {};
template <> struct k_of<short, false> : k_int<short> {};
template <> struct k_of<unsigned short, false> : k_int<unsigned short> {};
template <> struct k_of<int, false> : k_int<int> {};
template <> struct k_of<unsigned int, false> : k_int<unsigned int> {};
template <> struct k_of<long, false> : k_int<long> {};
template <> struct k_of<unsigned long, false> : k_int<unsigned long> {};
template <> struct k_of<long long, false> : k_int<long long> {};
template <> struct k_of<unsigned long long, false> : k_int<unsigned long long> {};
template <> struct k_of<wchar_t, false> : k_int<wchar_t> {};
template <> struct k_of<char16_t, false> : k_int<char16_t> {};
template <> struct k_of<char32_t, false> : k_int<char32_t> {};
// CUDA's 16-bit float classes, where the source included their headers: only they stand for
// Rust's f16 / bf16 (any other 2-byte class, two bools, means other types).
#ifdef __CUDA_FP16_TYPES_EXIST__
template <> struct k_of<__half, true> { typedef k_half_class<0> type; };
#endif
#ifdef __CUDA_BF16_TYPES_EXIST__
template <> struct k_of<__nv_bfloat16, true> { typedef k_half_class<1> type; };
#endif
template <class A, class B> struct k_same { enum { value = 0 }; };
template <class A> struct k_same<A, A> { enum { value = 1 }; };
// Whether a definition's type (described) fits the declared one: the same description; a
// pointer to void on either side fits any pointer; any class fits a declared struct; f16 and
// bf16 by value are their bits (Rust passes them as a 16-bit integer, CUDA's __half is a
// class passed as an aggregate), pointed to they may be any 2-byte class.
template <class Declared, class Defined> struct k_fits {
  enum { value = k_same<Declared, Defined>::value };
};
template <class D, class E> struct k_fits<k_ptr<D>, k_ptr<E> > {
  enum { value = k_fits<D, E>::value };
};
template <class E> struct k_fits<k_ptr<k_none>, k_ptr<E> > { enum { value = 1 }; };
template <class D> struct k_fits<k_ptr<D>, k_ptr<k_none> > { enum { value = 1 }; };
template <> struct k_fits<k_ptr<k_none>, k_ptr<k_none> > { enum { value = 1 }; };
template <unsigned long N> struct k_fits<k_any_class, k_class<N> > { enum { value = 1 }; };
template <int B> struct k_fits<k_half<B>, k_scalar<3, 2> > { enum { value = 1 }; };
template <int B> struct k_fits<k_ptr<k_half<B> >, k_ptr<k_half_class<B> > > { enum { value = 1 }; };
// Pointed to, also a class of two bytes written for it (a header-free `struct Half`); CUDA's
// class of the other 16-bit float is no such class.
template <int B> struct k_fits<k_ptr<k_half<B> >, k_ptr<k_class<2> > > { enum { value = 1 }; };
// The Numba return slot: written through, so a definition's `void*` fits only a declared
// `void*` (a `()` return); otherwise as any pointer.
template <class P> struct k_slot {};
template <class D, class E> struct k_fits<k_slot<k_ptr<D> >, k_ptr<E> > : k_fits<k_ptr<D>, k_ptr<E> > {};
template <class D> struct k_fits<k_slot<k_ptr<D> >, k_ptr<k_none> > { enum { value = 0 }; };
template <> struct k_fits<k_slot<k_ptr<k_none> >, k_ptr<k_none> > { enum { value = 1 }; };
template <unsigned I, class... A> struct k_at { typedef void type; };
template <class H, class... A> struct k_at<0, H, A...> { typedef H type; };
template <unsigned I, class H, class... A> struct k_at<I, H, A...> : k_at<I - 1, A...> {};
// A function type: what its return value and parameters are (`ret`, `param<I>::type`) and
// the types themselves, without qualifiers (`ret_type`, `arg<I>::type`), for struct layouts.
template <class F> struct k_fn {
  enum { function = 0, params = -1 };
  typedef k_other ret;
  typedef k_other ret_type;
  template <unsigned I> struct param { typedef k_other type; };
  template <unsigned I> struct arg { typedef k_other type; };
};
template <class R, class... A> struct k_fn<R(A...)> {
  enum { function = 1, params = sizeof...(A) };
  typedef typename k_of<typename k_bare<R>::type>::type ret;
  typedef typename k_bare<R>::type ret_type;
  template <unsigned I> struct param {
    typedef typename k_of<typename k_bare<typename k_at<I, A...>::type>::type>::type type;
  };
  template <unsigned I> struct arg {
    typedef typename k_bare<typename k_at<I, A...>::type>::type type;
  };
};
// Struct layouts (a declared `#[repr(C)]` struct, by value or pointed to): the struct a
// parameter passes, whether it is a class (the layout is checked only then: any other type
// already failed its parameter's check), and a field's type compared with the Rust field's
// (an f16 / bf16 field may also be CUDA's 2-byte class).
template <class T> struct k_pointee { typedef k_other type; };
template <class T> struct k_pointee<T*> { typedef typename k_bare<T>::type type; };
template <class T> struct k_is_class { enum { value = __is_class(T) }; };
template <class T> struct k_void { typedef void type; };
// Whether a field is a built-in array: a field whose element the record names (`v[0]`) must be
// one, not a class with an `operator[]` that reaches one member only.
template <class T> struct k_is_array { enum { value = 0 }; };
template <class T, unsigned long N> struct k_is_array<T[N]> { enum { value = 1 }; };
// What a member named by a designator is, where the layout check cannot measure it: a
// reference (`decltype` of a member access is the member's declared type), and, from a pointer
// to it (`&P::name`: ill-formed for a bit-field or a reference), a static member (a plain
// pointer, not a pointer to member).
template <class T> struct k_is_ref { enum { value = 0 }; };
template <class T> struct k_is_ref<T&> { enum { value = 1 }; };
// A function type (a static member function's): adding const to it changes nothing. Its
// `sizeof` is no size.
template <class T> struct k_is_fn { enum { value = k_same<const T, T>::value }; };
template <class T, bool = k_is_fn<T>::value> struct k_size { enum { value = sizeof(T) }; };
template <class T> struct k_size<T, true> { enum { value = 0 }; };
template <class T> struct k_is_static { enum { value = 1 }; };
template <class M, class C> struct k_is_static<M C::*> { enum { value = 0 }; };
template <int> struct k_constant { typedef void type; };
// Whether a value-initialized T can be copied as bytes in a constant expression
// (`__builtin_bit_cast`): not when a union (named or anonymous), a pointer, a reference or a
// volatile member is anywhere inside it, nor (clang, NVRTC) a bit-field. A struct of Rust's
// with a `bool` needs it: a union member laid over the bool could write any byte there.
// Without the builtin (gcc before 11) nothing can tell, and such a struct is refused.
template <unsigned long N> struct k_bytes { unsigned char b[N]; };
#ifdef __GPUKERNEL_FFI_BIT_CAST
#undef __GPUKERNEL_FFI_BIT_CAST
#endif
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define __GPUKERNEL_FFI_BIT_CAST 1
#endif
#endif
#ifdef __GPUKERNEL_FFI_BIT_CAST
enum { k_bit_cast = 1 };
template <class T, class = void> struct k_plain_bytes { enum { value = 0 }; };
template <class T>
struct k_plain_bytes<T, typename k_constant<(__builtin_bit_cast(k_bytes<sizeof(T)>, T()), 0)>::type> {
  enum { value = 1 };
};
#undef __GPUKERNEL_FFI_BIT_CAST
#else
enum { k_bit_cast = 0 };
template <class T> struct k_plain_bytes { enum { value = 0 }; };
#endif
template <class D> struct k_field {};
template <class D, class E> struct k_fits<k_field<D>, E> : k_fits<D, E> {};
template <int B> struct k_fits<k_field<k_half<B> >, k_half_class<B> > { enum { value = 1 }; };
#if __cplusplus >= 201703L
template <class R, class... A> struct k_fn<R(A...) noexcept> : k_fn<R(A...)> {};
#endif
}  // namespace __gpukernel_ffi
