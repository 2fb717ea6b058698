//! The Linux `arch_prctl` XCOMP permission calls for AMX tile data (Linux >= 5.16).

const ARCH_GET_XCOMP_PERM: libc::c_long = 0x1022;
const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
const XFEATURE_XTILEDATA: libc::c_long = 18;

/// `ARCH_REQ_XCOMP_PERM(XTILEDATA)` then `ARCH_GET_XCOMP_PERM`; the granted mask.
pub fn request_xtiledata() -> Option<u64> {
    // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM takes an integer argument and only
    // changes this process's permitted xstate; an old kernel returns EINVAL.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    if rc != 0 {
        return None;
    }
    let mut mask: u64 = 0;
    // SAFETY: ARCH_GET_XCOMP_PERM writes one u64 through the pointer, which points to
    // `mask`, alive and writable for the whole call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_PERM,
            &mut mask as *mut u64,
        )
    };
    (rc == 0).then_some(mask)
}
