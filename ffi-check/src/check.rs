//! The C++ check of a definition against its declaration, compiled *after* the foreign source
//! by every compiler that meets it (NVRTC in the run-time Linker, clang for `foreign_cuda`, the
//! host compiler for the simulator): [`CHECK_HEADER`], then per declaration one
//! `static_assert` per property under a `#line` naming the Rust declaration
//! ([`c_check`]). Each takes the definition's type with `decltype` and compares what each
//! parameter and the return value are (bool, signed or unsigned integer, float, of how many
//! bytes; pointers by their pointee; structs as classes), never their spelling; a declared
//! `#[repr(C)]` struct with a recorded layout is compared with the C struct the definition
//! names: its `sizeof`, `alignof`, and each named field's offset (`__builtin_offsetof`) and
//! type; a C bit-field, reference or static member where Rust has a field is named as such, and
//! a struct that holds a Rust `bool` must hold no union (whose other members could write any
//! byte over it). A failed assertion's message starts `[gpukernel] <symbol>: ` ([`read_log`]).

use crate::record::{Declaration, ForeignAbi, StructLayout};

/// The check's declarations (`__gpukernel_ffi::k_*`): needs no header, and undefines the
/// macros that could blind it.
pub const CHECK_HEADER: &str = include_str!("../ffi_check.h");

/// The name the check's own lines carry in compiler messages.
pub const CHECK_HEADER_NAME: &str = "gpukernel_ffi_check.h";

/// The checks of `decls` that can be made ([`c_check`]), after the header under its own
/// name; empty when there are none.
///
/// ```
/// use gpukernel_ffi_check::{Declaration, check};
/// let d = Declaration::parse("gpukernel-foreign-v1\nsymbol=f\nabi=c\nat=a.rs:2\nret=int\narg=int\n").unwrap();
/// assert!(check::checks_text(&[&d]).starts_with("\n#line 1 \"gpukernel_ffi_check.h\"\n"));
/// assert!(check::checks_text(&[]).is_empty());
/// ```
pub fn checks_text(decls: &[&Declaration]) -> String {
    let checks: Vec<String> = decls.iter().filter_map(|d| c_check(d)).collect();
    if checks.is_empty() {
        return String::new();
    }
    let mut out = format!("\n#line 1 \"{CHECK_HEADER_NAME}\"\n{CHECK_HEADER}");
    for check in checks {
        out.push_str(&check);
    }
    out
}

/// The C++ check of a definition of `decl` (see the module's documentation); `None` when a
/// type has no description (a record from another version of the macro).
///
/// ```
/// use gpukernel_ffi_check::{Declaration, check};
/// let d = Declaration::parse(
///     "gpukernel-foreign-v1\nsymbol=f\nabi=c\nat=a.rs:2\nret=void\narg=struct P\n\
///      struct=P:8:4\nfield=P:x:0:4:3\nfield=P:y:4:4:2\n",
/// )
/// .unwrap();
/// let text = check::c_check(&d).unwrap();
/// assert!(text.contains("__builtin_offsetof(T, y)") && text.contains("alignof"));
/// ```
pub fn c_check(decl: &Declaration) -> Option<String> {
    let ns = "::__gpukernel_ffi";
    let sym = &decl.symbol;
    let fn_ty = format!("{ns}::k_fn<decltype({sym})>");
    let (file, line) = decl.file_and_line();
    // A macro of the symbol's name (defined after the definition) would make the check judge
    // another function: the check names the function the source defined.
    let mut out = format!("#ifdef {sym}\n#undef {sym}\n#endif\n");
    // Every assertion on the declaration's line, so that an error there is the check's.
    let at = format!("#line {line} \"{}\"\n", escape(file));
    // (declared C type, what it is, the C type of the definition there) for the return value
    // and each parameter.
    let mut params: Vec<(String, String, String)> = Vec::new();
    let ret = match decl.abi {
        ForeignAbi::Numba => {
            let slot = format!("{}*", decl.ret);
            params.push((
                // The slot is written by the definition: a `void*` there would accept any
                // pointee, so only a `()` return (declared `void*`) keeps it.
                format!("{ns}::k_slot<{} >", descriptor(&slot)?),
                format!(
                    "parameter 1, the return slot, must be '{slot}' ({})",
                    meaning(&slot)
                ),
                format!("{fn_ty}::arg<0>::type"),
            ));
            (
                descriptor("int")?,
                "the definition must return 'int' (the status, 0 for success)".to_owned(),
            )
        }
        _ => (
            descriptor(&decl.ret)?,
            format!(
                "the definition must return '{}' ({})",
                decl.ret,
                meaning(&decl.ret)
            ),
        ),
    };
    let first = params.len();
    for (i, ty) in decl.args.iter().enumerate() {
        params.push((
            descriptor(ty)?,
            format!(
                "parameter {} must be '{ty}' ({}), as the argument {} of the declaration",
                first + i + 1,
                meaning(ty),
                i + 1
            ),
            format!("{fn_ty}::arg<{}>::type", first + i),
        ));
    }
    let mut asserts: Vec<(String, String)> = vec![
        (
            format!("{fn_ty}::function"),
            "the name is declared, but not as a function".to_owned(),
        ),
        (
            format!("{fn_ty}::params == {}", params.len()),
            format!(
                "the definition must take {} parameter(s): {}",
                params.len(),
                decl.c_declaration()
            ),
        ),
        (
            format!("{ns}::k_fits<{}, {fn_ty}::ret>::value", ret.0),
            ret.1,
        ),
    ];
    // The struct layouts: the C return value of a plain C function, and each parameter that
    // passes a recorded struct by value or points to one.
    let mut layouts: Vec<(String, &StructLayout, String)> = Vec::new();
    if decl.abi == ForeignAbi::C
        && let Some(layout) = decl.struct_layout(&decl.ret)
    {
        layouts.push((
            format!("{fn_ty}::ret_type"),
            layout,
            "the returned struct".to_owned(),
        ));
    }
    for (i, (desc, message, arg)) in params.iter().enumerate() {
        asserts.push((
            format!("{ns}::k_fits<{desc}, {fn_ty}::param<{i}>::type>::value"),
            message.clone(),
        ));
        let declared = if decl.abi == ForeignAbi::Numba && i == 0 {
            format!("{}*", decl.ret)
        } else {
            decl.args[i - first].clone()
        };
        if let Some(layout) = decl.struct_layout(&declared) {
            let (ty, what) = if declared.trim_end().ends_with('*') {
                (
                    format!("{ns}::k_pointee<{arg} >::type"),
                    format!("the struct that parameter {} points to", i + 1),
                )
            } else {
                (arg.clone(), format!("the struct of parameter {}", i + 1))
            };
            layouts.push((ty, layout, what));
        }
    }
    let mut probes = String::new();
    for (k, (ty, layout, what)) in layouts.iter().enumerate() {
        layout_asserts(
            &fn_ty,
            ty,
            layout,
            what,
            &format!("{sym}_{k}"),
            &mut probes,
            &mut asserts,
        );
    }
    if !probes.is_empty() {
        // The probes' own errors (a bit-field's offset) are not the declaration's.
        out.push_str(&format!("#line 1 \"{CHECK_HEADER_NAME}\"\n{probes}"));
    }
    for (cond, message) in asserts {
        out.push_str(&at);
        out.push_str(&format!(
            "static_assert({cond}, \"[gpukernel] {sym}: {}\");\n",
            escape(&message)
        ));
    }
    Some(out)
}

/// The assertions of one struct layout: `ty` (a C++ type expression) must be a class of the
/// recorded size and alignment whose fields of the Rust fields' names sit at their offsets and
/// are of their types, each a member of its own bytes (not a bit-field, a reference or a static
/// member), and, where Rust's struct holds a `bool`, with no union in it. A member is found by
/// name through a probe ([`probe`]: class templates specialized only where `T::name` exists and
/// can be measured, so that what C declares differently fails an assertion that names it, not
/// the compile); `probes` receives the probes, in a namespace of their own per struct (`tag`).
fn layout_asserts(
    fn_ty: &str,
    ty: &str,
    layout: &StructLayout,
    what: &str,
    tag: &str,
    probes: &mut String,
    asserts: &mut Vec<(String, String)>,
) {
    let ns = "::__gpukernel_ffi";
    let name = &layout.name;
    // Only a class is measured: any other type already failed its parameter's check.
    let skip = format!("!({fn_ty}::function && {ns}::k_is_class<{ty} >::value)");
    asserts.push((
        format!("{skip} || sizeof({ty}) == {}", layout.size),
        format!(
            "{what} must be {} bytes (sizeof), as Rust's '{name}' is",
            layout.size
        ),
    ));
    asserts.push((
        format!("{skip} || alignof({ty}) == {}", layout.align),
        format!(
            "{what} must be aligned to {} bytes (alignof), as Rust's '{name}' is",
            layout.align
        ),
    ));
    // A field no C field can be named like (a tuple struct's `0`, `1`, also inside a nested
    // struct: `inner.0`): nothing would check it, so the struct is refused.
    if let Some(f) = layout
        .fields
        .iter()
        .find(|f| !is_member_designator(&f.name))
    {
        asserts.push((
            skip.clone(),
            format!(
                "{what}: Rust's '{name}' has a field named '{}' (a tuple struct), which no C \
                 field can be named like, so its type could not be checked: give the Rust \
                 struct named fields, named as the C struct's",
                f.name
            ),
        ));
    }
    let fields: Vec<_> = layout
        .fields
        .iter()
        .filter(|f| is_member_designator(&f.name))
        .collect();
    if fields.is_empty() {
        return;
    }
    // A Rust `bool` anywhere inside: no C member may lie over its byte, and a union is the
    // only way C lays members over each other; the C struct must be free of unions, which
    // the check learns by copying a value-initialized one as bytes at compile time.
    if let Some(flag) = fields.iter().find(|f| f.c_type == "bool") {
        let holds = format!(
            "Rust's '{name}' holds a 'bool' ('{name}.{}'), which the definition may only ever \
             write as 0 or 1",
            flag.name
        );
        asserts.push((
            format!("{skip} || !{ns}::k_bit_cast || {ns}::k_plain_bytes<{ty} >::value"),
            format!(
                "{what}: {holds}, so the C struct must be plain: no union, named or anonymous, \
                 anywhere in it (a member laid over the bool may write any byte there), nor a \
                 pointer, volatile or bit-field member or a user-written constructor (the check \
                 copies a value-initialized one as bytes at compile time, which those forbid); \
                 move the other members out of the union, or make the Rust field an integer \
                 ('u8')"
            ),
        ));
        asserts.push((
            format!("{skip} || {ns}::k_bit_cast"),
            format!(
                "{what}: {holds}, and this compiler has no '__builtin_bit_cast', so the check \
                 cannot tell whether a union member lies over it: compile with gcc 11 or later, \
                 clang 9 or later, or NVRTC, or make the Rust field an integer ('u8')"
            ),
        ));
    }
    // One probe per designator and per designator it goes through (`p` and `p[0]` for
    // `p[0].b`), the shorter first, so that a probe may ask its parent's.
    let mut probes_of: Vec<Designated> = Vec::new();
    for f in &fields {
        for d in designator_prefixes(&f.name) {
            if !probes_of.iter().any(|p| p.designator == d) {
                let parent = parent_designator(&d)
                    .and_then(|p| probes_of.iter().position(|q| q.designator == p));
                probes_of.push(Designated {
                    designator: d,
                    parent,
                });
            }
        }
    }
    probes.push_str(&format!(
        "namespace __gpukernel_ffi {{ namespace p_{tag} {{\n"
    ));
    for (j, p) in probes_of.iter().enumerate() {
        probes.push_str(&probe(j, p));
    }
    probes.push_str("} }\n");
    let probe_at = |j: usize| format!("{ns}::p_{tag}::f{j}<{ty} >");
    for (j, p) in probes_of.iter().enumerate() {
        let field = &p.designator;
        let recorded = fields.iter().find(|f| f.name == *field);
        let rust_field = match recorded {
            Some(f) => format!(
                "Rust's field '{name}.{field}' (offset {}, {})",
                f.offset,
                field_meaning(&f.c_type, f.size)
            ),
            None => format!("Rust's field '{name}.{field}'"),
        };
        let probe = probe_at(j);
        let present = format!("{skip} || !{probe}::has");
        // A Rust array (its first element recorded as `v[0]`) must be a C array: a class
        // indexed by an `operator[]` passes the element's check for one member only, and its
        // other members may be of other types.
        if let (Some(k), true) = (p.parent, field.ends_with(']')) {
            let array = &probes_of[k].designator;
            asserts.push((
                format!("{present} || {}::array", probe_at(k)),
                format!(
                    "{what}: its field '{array}' must be a C array, as Rust's field \
                     '{name}.{array}' is (not a class indexed by an operator[], nor a pointer)"
                ),
            ));
        }
        // What C declares that no Rust field can be: named, where the compiler would
        // otherwise stop at the measurement (`offsetof` of a bit-field, of a reference). An
        // array element is none of them.
        if !field.ends_with(']') {
            let bitfield = format!(
                "{what}: its field '{field}' is a bit-field, which no Rust field can be \
                 ({rust_field} is a whole field of its own bytes): declare it a plain member"
            );
            let reference = format!(
                "{what}: its field '{field}' is a reference, not a value ({rust_field} is held \
                 in the struct's own bytes, a C reference member refers to an object \
                 elsewhere): declare it as a value ('T {field}', not 'T& {field}')"
            );
            let is_static = format!(
                "{what}: its field '{field}' is a static member, not a field of the struct: \
                 {rust_field} needs a non-static C field of the same name"
            );
            asserts.extend([
                (format!("{present} || !{probe}::bitfield"), bitfield),
                (format!("{present} || !{probe}::reference"), reference),
                (format!("{present} || !{probe}::is_static"), is_static),
            ]);
        }
        let Some(f) = recorded else {
            continue;
        };
        asserts.push((
            format!("{skip} || {probe}::has"),
            format!("{what} has no field '{field}': {rust_field} needs a C field of the same name"),
        ));
        // Measured only where it can be (`plain`: a member of its own bytes, through members
        // and array elements that are too); where it cannot, an assertion above names why.
        let measured = format!("{present} || !{probe}::plain");
        asserts.push((
            format!("{measured} || {probe}::offset == {}", f.offset),
            format!(
                "{what}: its field '{field}' must be at offset {} (offsetof), as {rust_field}",
                f.offset
            ),
        ));
        let kind = match descriptor(&f.c_type) {
            Some(desc) if f.c_type != "bytes" => format!(
                "{ns}::k_fits<{ns}::k_field<{desc} >, {ns}::k_of<{ns}::k_bare<{probe}::type>::type>::type>::value"
            ),
            _ => format!("{probe}::size == {}", f.size),
        };
        asserts.push((
            format!("{measured} || {kind}"),
            format!(
                "{what}: its field '{field}' must be {}, as {rust_field}",
                field_meaning(&f.c_type, f.size)
            ),
        ));
    }
}

/// A designator the layout check probes, and the probe of the one it goes through (`v` for
/// `v[0]`, `inner` for `inner.a`; none for a member of the struct itself).
struct Designated {
    designator: String,
    parent: Option<usize>,
}

/// The probe `f{j}` of `p` (see [`layout_asserts`]): whether `T` has a member of that
/// designator (an lvalue, not a function: an enumerator or a member function is none) and its
/// type, and, so that nothing in it stops the compile where C declares
/// what no Rust field can be: whether it is a bit-field (its address cannot be taken), a
/// reference or a static member (asked of a pointer to it, `&P::name`), whether it is reached
/// through members of their own bytes and built-in arrays, and only then its offset
/// (`__builtin_offsetof`, or NVRTC's `__INTADDR__`, which has no such builtin).
fn probe(j: usize, p: &Designated) -> String {
    let d = &p.designator;
    let access = format!("static_cast<T*>(0)->{d}");
    let mut out = format!(
        "template <class T, class = void> struct f{j} {{ enum {{ has = 0, bitfield = 0, reference = 0, is_static = 0, array = 0, plain = 0, offset = 0, size = 0 }}; typedef k_other type; }};\n\
         template <class T, int Plain> struct o{j} {{ enum {{ offset = 0 }}; }};\n\
         template <class T> struct o{j}<T, 1> {{\n\
         #if defined(__CUDACC_RTC__)\n\
         \x20 enum {{ offset = (unsigned long)__INTADDR__(&({access})) }};\n\
         #else\n\
         \x20 enum {{ offset = __builtin_offsetof(T, {d}) }};\n\
         #endif\n}};\n"
    );
    let parent = p.parent.map(|k| format!("f{k}<T>"));
    let element = d.ends_with(']');
    let (bitfield, reference, is_static) = if element {
        ("0".to_owned(), "0".to_owned(), "0".to_owned())
    } else {
        let member = &d[d.rfind('.').map_or(0, |i| i + 1)..];
        let owner = match &parent {
            Some(parent) => format!("typename k_bare<typename {parent}::type>::type"),
            None => "T".to_owned(),
        };
        out.push_str(&format!(
            "template <class T, class = void> struct a{j} {{ enum {{ value = 0 }}; }};\n\
             template <class T> struct a{j}<T, typename k_void<decltype(&({access}))>::type> {{ enum {{ value = 1 }}; }};\n\
             template <class P, class = void> struct s{j} {{ enum {{ value = 0 }}; }};\n\
             template <class P> struct s{j}<P, typename k_void<decltype(&P::{member})>::type> {{ enum {{ value = k_is_static<decltype(&P::{member})>::value }}; }};\n"
        ));
        (
            format!("!a{j}<T>::value"),
            "k_is_ref<type>::value".to_owned(),
            format!("s{j}<{owner} >::value"),
        )
    };
    let reached = match (&parent, element) {
        (None, _) => "1".to_owned(),
        (Some(parent), true) => format!("{parent}::plain && {parent}::array"),
        (Some(parent), false) => format!("{parent}::plain"),
    };
    out.push_str(&format!(
        "template <class T> struct f{j}<T, typename k_void<decltype({access})>::type> {{\n\
         \x20 typedef decltype({access}) type;\n\
         \x20 typedef typename k_bare<type>::type bare;\n\
         \x20 enum {{ has = k_is_ref<decltype(({access}))>::value && !k_is_fn<bare>::value, bitfield = {bitfield}, reference = {reference}, is_static = {is_static}, array = k_is_array<bare>::value, size = k_size<bare>::value }};\n\
         \x20 enum {{ plain = has && ({reached}) && !bitfield && !reference && !is_static }};\n\
         \x20 enum {{ offset = o{j}<T, plain>::offset }};\n}};\n"
    ));
    out
}

/// `d` and the designators it goes through, the shortest first: `p`, `p[0]`, `p[0].b` for
/// `p[0].b`.
fn designator_prefixes(d: &str) -> Vec<String> {
    let mut out: Vec<String> = d
        .match_indices(['.', '['])
        .map(|(i, _)| d[..i].to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    out.push(d.to_owned());
    out
}

/// The designator `d` goes through last (`p[0]` for `p[0].b`, `v` for `v[0]`), if any.
fn parent_designator(d: &str) -> Option<&str> {
    d.rfind(['.', '['])
        .map(|i| &d[..i])
        .filter(|p| !p.is_empty())
}

fn field_meaning(c_type: &str, size: u64) -> String {
    if c_type == "bytes" {
        format!("{size} bytes (an array or a struct)")
    } else {
        format!("'{c_type}' ({})", meaning(c_type))
    }
}

/// Whether `s` is a C member designator as the record writes them: an identifier followed by
/// `.identifier` or `[digits]` parts (`a`, `inner.a`, `v[0]`, `v[0][0].b`).
///
/// ```
/// use gpukernel_ffi_check::check::is_member_designator;
/// for ok in ["a", "inner.a", "v[0]", "v[0][0].b_2"] {
///     assert!(is_member_designator(ok), "{ok}");
/// }
/// for bad in ["0", "inner.0", "v[]", "v[0", ".a", "a.", "a..b", "[0]", "v[x]"] {
///     assert!(!is_member_designator(bad), "{bad}");
/// }
/// ```
pub fn is_member_designator(s: &str) -> bool {
    let Some(end) = s.find(['.', '[']) else {
        return is_c_identifier(s);
    };
    if !is_c_identifier(&s[..end]) {
        return false;
    }
    let mut rest = &s[end..];
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if !is_c_identifier(&after[..end]) {
                return false;
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            match after.find(']') {
                Some(close) if close > 0 && after[..close].bytes().all(|b| b.is_ascii_digit()) => {
                    rest = &after[close + 1..];
                }
                _ => return false,
            }
        } else {
            return false;
        }
    }
    true
}

/// Whether `s` is a C identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The description of a declared C type for the check ([`CHECK_HEADER`]'s `k_*` types), from
/// the record's spelling (this version's builtin types, or an earlier one's `int32_t` & co.).
///
/// ```
/// use gpukernel_ffi_check::check::descriptor;
/// assert_eq!(descriptor("const int*").unwrap(), "::__gpukernel_ffi::k_ptr<::__gpukernel_ffi::k_scalar<2, 4> >");
/// assert!(descriptor("long double").is_none());
/// ```
pub fn descriptor(ty: &str) -> Option<String> {
    let ty = ty.trim();
    if let Some(pointee) = ty.strip_suffix('*') {
        return Some(format!(
            "::__gpukernel_ffi::k_ptr<{} >",
            descriptor(pointee)?
        ));
    }
    let ty = ty.strip_prefix("const ").unwrap_or(ty).trim();
    let scalar = |kind: u8, size: u8| Some(format!("::__gpukernel_ffi::k_scalar<{kind}, {size}>"));
    match ty {
        "void" => Some("::__gpukernel_ffi::k_none".to_owned()),
        "bool" => scalar(1, 1),
        "signed char" | "int8_t" => scalar(2, 1),
        "short" | "int16_t" => scalar(2, 2),
        "int" | "int32_t" => scalar(2, 4),
        "long long" | "int64_t" | "ptrdiff_t" => scalar(2, 8),
        "unsigned char" | "uint8_t" => scalar(3, 1),
        "unsigned short" | "uint16_t" => scalar(3, 2),
        "unsigned int" | "uint32_t" => scalar(3, 4),
        "unsigned long long" | "uint64_t" | "size_t" => scalar(3, 8),
        "float" => scalar(4, 4),
        "double" => scalar(4, 8),
        "struct f16" => Some("::__gpukernel_ffi::k_half<0>".to_owned()),
        "struct bf16" => Some("::__gpukernel_ffi::k_half<1>".to_owned()),
        _ if ty.starts_with("struct ") => Some("::__gpukernel_ffi::k_any_class".to_owned()),
        _ => None,
    }
}

/// What a declared C type is, in words, for messages.
///
/// ```
/// use gpukernel_ffi_check::check::meaning;
/// assert_eq!(meaning("const unsigned int*"), "a pointer to an unsigned 32-bit integer");
/// ```
pub fn meaning(ty: &str) -> String {
    let ty = ty.trim();
    if let Some(pointee) = ty.strip_suffix('*') {
        let pointee = pointee.trim();
        return if pointee == "void" || pointee == "const void" {
            "a pointer to anything".to_owned()
        } else {
            format!("a pointer to {}", meaning(pointee))
        };
    }
    let ty = ty.strip_prefix("const ").unwrap_or(ty).trim();
    let int = |signed: bool, bits: u8| {
        format!(
            "{} {bits}-bit integer",
            if signed { "a signed" } else { "an unsigned" }
        )
    };
    match ty {
        "void" => "nothing".to_owned(),
        "bool" => "a C++ bool".to_owned(),
        "signed char" | "int8_t" => int(true, 8),
        "short" | "int16_t" => int(true, 16),
        "int" | "int32_t" => int(true, 32),
        "long long" | "int64_t" | "ptrdiff_t" => int(true, 64),
        "unsigned char" | "uint8_t" => int(false, 8),
        "unsigned short" | "uint16_t" => int(false, 16),
        "unsigned int" | "uint32_t" => int(false, 32),
        "unsigned long long" | "uint64_t" | "size_t" => int(false, 64),
        "float" => "a 32-bit float".to_owned(),
        "double" => "a 64-bit float".to_owned(),
        "struct f16" => {
            "a 16-bit float, by value its bits: 'unsigned short' ('__half_as_ushort'); \
                          pointed to, '__half'"
                .to_owned()
        }
        "struct bf16" => {
            "a bfloat16, by value its bits: 'unsigned short' ('__bfloat16_as_ushort'); \
                           pointed to, '__nv_bfloat16'"
                .to_owned()
        }
        _ => "a struct passed by value".to_owned(),
    }
}

/// What a compiler log of a source compiled with checks says about them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The first declaration (in the order given) whose assertions failed and the source
    /// declares: its symbol and the failed assertions' messages, in the log's order.
    pub mismatch: Option<(String, Vec<String>)>,
    /// The symbols the source does not declare at global scope (another error on the check's
    /// line names the symbol): not a mismatch; compile again without their checks.
    pub undeclared: Vec<String>,
}

/// Reads a compiler log (NVRTC's `file(12): error: ...`, clang's or gcc's `file:12:5: error:
/// ...`) of a source compiled with the checks of `decls`.
///
/// ```
/// use gpukernel_ffi_check::{Declaration, check};
/// let d = Declaration::parse("gpukernel-foreign-v1\nsymbol=f\nabi=c\nat=a.rs:2\nret=int\n").unwrap();
/// let log = "a.rs:2:1: error: static assertion failed: [gpukernel] f: the definition must return 'int'";
/// let v = check::read_log(log, &[&d]);
/// assert_eq!(v.mismatch.unwrap().1, ["the definition must return 'int'"]);
/// let log = "a.rs:2:1: error: use of undeclared identifier 'f'";
/// assert_eq!(check::read_log(log, &[&d]).undeclared, ["f"]);
/// ```
pub fn read_log(log: &str, decls: &[&Declaration]) -> Verdict {
    let mut verdict = Verdict::default();
    for decl in decls {
        let marker = format!("[gpukernel] {}: ", decl.symbol);
        let mut failed: Vec<String> = Vec::new();
        let mut undeclared = false;
        for line in log.lines().filter(|l| l.contains("error")) {
            if let Some(at) = line.find(&marker) {
                let message = line[at + marker.len()..].trim_end_matches('"').trim();
                if !failed.iter().any(|f| f == message) {
                    failed.push(message.to_owned());
                }
            } else if location(line).as_deref() == Some(decl.declared_at.as_str()) {
                // Another error on the check's line (every assertion of the declaration sits
                // there; the struct probes do not): the check could not take the definition's
                // type (`'f' is undefined`, `reference to overloaded function could not be
                // resolved`, gcc's `'decltype' cannot resolve address of overloaded function`).
                undeclared = true;
            }
        }
        if undeclared {
            if !verdict.undeclared.contains(&decl.symbol) {
                verdict.undeclared.push(decl.symbol.clone());
            }
        } else if !failed.is_empty() && verdict.mismatch.is_none() {
            verdict.mismatch = Some((decl.symbol.clone(), failed));
        }
    }
    verdict
}

/// The detail of a mismatch: the failed assertions, then the definition's line of `source`
/// (1-based, when found) quoted.
pub fn mismatch_detail(failed: &[String], source: &str, line: Option<usize>) -> String {
    let mut detail = failed.join("; ");
    if let Some(text) = line.and_then(|l| source.lines().nth(l - 1)) {
        detail.push_str(&format!("\n  the definition: {}", text.trim()));
    }
    detail
}

/// Why a definition of `symbol` that the check could not see is refused, and what to write
/// instead (the same words on every path).
pub fn unseen_definition_detail(symbol: &str) -> String {
    format!(
        "the definition could not be checked: '{symbol}' is not visible at global scope after \
         the source (it is defined inside a namespace, or shares its name with C++ overloads); \
         define it at global scope as one `extern \"C\"` function, with no overload of the same \
         name"
    )
}

/// `file(12): error: ...` (NVRTC) or `file:12:5: error: ...` (gcc, clang) → `file:12`.
pub fn location(line: &str) -> Option<String> {
    if let Some((file, rest)) = line.split_once('(')
        && let Some((number, _)) = rest.split_once(')')
        && number.bytes().all(|c| c.is_ascii_digit())
        && !number.is_empty()
    {
        return Some(format!("{file}:{number}"));
    }
    let mut parts = line.splitn(3, ':');
    let (file, number) = (parts.next()?, parts.next()?);
    (!number.is_empty() && number.bytes().all(|c| c.is_ascii_digit()))
        .then(|| format!("{file}:{number}"))
}

/// Whether `text` names `name` as a whole identifier.
pub fn mentions_name(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The first line of `text` (1-based) where `name(` starts something that is followed by a
/// `{` before the next `;` (the definition, roughly), else the first that is followed by a
/// `;` and is not a call (a declaration); for messages only.
///
/// ```
/// use gpukernel_ffi_check::check::definition_line;
/// let src = "int f(int);\n// f(1) {\nint g() { return f(1); }\nint f(int a) { return a; }\n";
/// assert_eq!(definition_line(src, "f"), Some(4));
/// ```
pub fn definition_line(text: &str, name: &str) -> Option<usize> {
    let mut declaration = None;
    let mut offset = 0;
    while let Some(found) = text[offset..].find(name) {
        let at = offset + found;
        offset = at + name.len();
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..at].contains("//") {
            continue;
        }
        let after = &text[at + name.len()..];
        if !after.trim_start().starts_with('(') {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        let brace = after.find('{');
        let semi = after.find(';');
        if matches!((brace, semi), (Some(b), Some(s)) if b < s)
            || (brace.is_some() && semi.is_none())
        {
            return Some(line);
        }
        let prefix = text[line_start..at].trim_end();
        let call = prefix.is_empty()
            || prefix.ends_with(['=', '(', ',', '+', '-', '!', '&', '|', '?', ':'])
            || prefix.ends_with("return");
        if !call && declaration.is_none() {
            declaration = Some(line);
        }
    }
    declaration
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(record_tail: &str) -> Declaration {
        Declaration::parse(&format!(
            "gpukernel-foreign-v1\nsymbol=f\nabi=numba\nat=src/a.rs:9\n{record_tail}"
        ))
        .unwrap()
    }

    #[test]
    fn struct_layouts_are_asserted_where_recorded() {
        let d = decl(
            "ret=struct P\narg=struct P\narg=const struct P*\narg=struct Q\n\
             struct=P:12:4\nfield=P:a:0:4:3\nfield=P:b:4:8:7\nfield=P:0:0:4:2\n",
        );
        let text = c_check(&d).unwrap();
        // The return slot's pointee, the by-value parameter and the pointee: three layouts of
        // `P`; `Q` has none recorded (a class of any layout, as before).
        assert_eq!(text.matches("== 12, ").count(), 3, "{text}");
        assert_eq!(text.matches("alignof(").count(), 3, "{text}");
        assert!(text.contains("k_pointee<::__gpukernel_ffi::k_fn<decltype(f)>::arg<0>::type >"));
        assert!(text.contains("k_pointee<::__gpukernel_ffi::k_fn<decltype(f)>::arg<2>::type >"));
        assert!(text.contains("k_fn<decltype(f)>::arg<1>::type >::value) || sizeof"));
        // Named fields get a probe each; a tuple field (`0`) cannot be named in C.
        assert_eq!(
            text.matches("__builtin_offsetof(T, a)").count(),
            3,
            "{text}"
        );
        assert_eq!(
            text.matches("__builtin_offsetof(T, b)").count(),
            3,
            "{text}"
        );
        assert!(!text.contains("__builtin_offsetof(T, 0)"));
        assert!(text.contains("::size == 8"), "{text}");
        assert!(text.contains("Rust's field 'P.a' (offset 0, 'float' (a 32-bit float))"));
        // Without layouts, no struct assertion.
        let old = decl("ret=struct P\narg=struct P\n");
        assert!(!c_check(&old).unwrap().contains("alignof"));
    }

    #[test]
    fn members_rust_cannot_match_and_unions_over_a_bool_are_asserted_by_name() {
        let d = decl(
            "ret=int\narg=struct P\nstruct=P:12:4\nfield=P:n:0:4:1\nfield=P:p:4:8:7\n\
             field=P:p[0]:4:4:8\nfield=P:p[0].ok:4:1:4\nfield=P:p[0].b:6:2:1\n",
        );
        let text = c_check(&d).unwrap();
        // A bool inside (an array element's field): the struct must copy as bytes (no union).
        assert!(
            text.contains(
                "k_plain_bytes<::__gpukernel_ffi::k_fn<decltype(f)>::arg<1>::type >::value"
            ),
            "{text}"
        );
        assert!(
            text.contains("Rust's 'P' holds a 'bool' ('P.p[0].ok')"),
            "{text}"
        );
        assert!(
            text.contains("|| ::__gpukernel_ffi::k_bit_cast, "),
            "{text}"
        );
        // Each designator is asked whether it is a bit-field, a reference or a static member;
        // an element whether its array is a built-in one.
        for f in ["n", "p", "p[0].ok", "p[0].b"] {
            for what in [
                "is a bit-field",
                "is a reference, not a value",
                "is a static member",
            ] {
                assert!(
                    text.contains(&format!("its field '{f}' {what}")),
                    "{f} {what}"
                );
            }
        }
        assert!(!text.contains("its field 'p[0]' is a bit-field"), "{text}");
        assert!(text.contains("its field 'p' must be a C array"), "{text}");
        // A member's probe asks its parent's (the element's), which asks the array's; only
        // a member measured through members and arrays of their own bytes has an offset.
        assert!(
            text.contains("enum { plain = has && (f1<T>::plain && f1<T>::array)"),
            "{text}"
        );
        assert!(
            text.contains("enum { plain = has && (f2<T>::plain) && !bitfield"),
            "{text}"
        );
        assert!(
            text.contains("s3<typename k_bare<typename f2<T>::type>::type >::value"),
            "{text}"
        );
        assert!(
            text.contains("template <class T> struct o3<T, 1>"),
            "{text}"
        );
        // Without a bool, no such assertion: unions over integers and floats make values.
        let d = decl("ret=int\narg=struct P\nstruct=P:4:4\nfield=P:n:0:4:1\n");
        assert!(!c_check(&d).unwrap().contains("k_plain_bytes"));
        assert_eq!(designator_prefixes("p[0].b"), ["p", "p[0]", "p[0].b"]);
        assert_eq!(designator_prefixes("m[0][1]"), ["m", "m[0]", "m[0][1]"]);
        assert_eq!(parent_designator("p[0].b"), Some("p[0]"));
        assert_eq!(parent_designator("a"), None);
    }

    #[test]
    fn logs_name_mismatches_and_undeclared_symbols() {
        let f = decl("ret=int\narg=int\n");
        let mut g = f.clone();
        g.symbol = "g".into();
        g.declared_at = "src/a.rs:12".into();
        let log = "src/a.rs(9): error: static assertion failed with \"[gpukernel] f: parameter 2 must be 'int'\"\n\
                   src/a.rs(12): error: identifier \"g\" is undefined\n\
                   src/a.rs(12): error: static assertion failed with \"[gpukernel] g: the name is declared\"\n";
        let v = read_log(log, &[&f, &g]);
        assert_eq!(
            v.mismatch,
            Some(("f".to_owned(), vec!["parameter 2 must be 'int'".to_owned()]))
        );
        assert_eq!(v.undeclared, ["g"]);
        // clang names an overload set's ambiguity on the check's line, quoting it below.
        let overloaded = "src/a.rs:9:48: error: reference to overloaded function could not be resolved\n\
                          \x20   9 | static_assert(::__gpukernel_ffi::k_fn<decltype(f)>::function, \"x\");\n";
        assert_eq!(read_log(overloaded, &[&f]).undeclared, ["f"]);
        let probe = "gpukernel_ffi_check.h:3:20: error: cannot compute offset of bit-field 'b'\n\
                     src/a.rs:9:1: note: in instantiation of template class requested here\n";
        assert_eq!(read_log(probe, &[&f]), Verdict::default());
        assert_eq!(location("k.cu:3:7: error: x").as_deref(), Some("k.cu:3"));
        assert_eq!(location("k.cu(3): error: x").as_deref(), Some("k.cu:3"));
    }
}
