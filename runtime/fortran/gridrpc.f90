! gridrpc.f90: the Fortran binding of GridRPC (module gridrpc).
!
! An existing Fortran program calls a remote function as it calls the local one:
!
!     use gridrpc
!     call grid_call('linalg/dmmul', n, a, b, c)          ! c = matmul(a, b)
!     call grid_call('linalg/dmmul', n, a, b, c, ierr=ierr) ! ierr /= 0: failed
!
! with no glue written per function: the arguments follow the function's IDL, and each
! one travels as a C descriptor (assumed-type, assumed-rank dummies) to gridrpc_f.c,
! which checks it against the function's interface, fetched from the server. Rules
! (docs/fortran.md):
!   - types: IDL int is the default integer, double is real(8), float real(4),
!     long and longlong integer(8), short integer(2), char character(len=1) or
!     integer(1), scomplex complex(4), dcomplex complex(8), string and filename
!     character(len=*) (trailing blanks trimmed; OUT strings come back blank-padded);
!   - arrays: a Fortran array of the IDL rank is matched index by index, a(i,j) being
!     the IDL's a[i][j] (rank >= 2 is transposed through a C-order copy); other ranks
!     are taken flat in array element order;
!   - errors: without ierr a failed call stops the program with the reason (ERROR
!     STOP); with ierr it is 0 or a GRID_ERR_* code and grid_last_error_f() says why.
!
! Remote data handles (docs/fortran.md): type(grid_data) h; call grid_data_put(h, b)
! puts an array on a server once; h is then passed to grid_call in place of the array
! (IN, OUT or INOUT), any number of times; grid_data_get(h, c) brings it back and
! grid_data_free(h) frees it. Transactions: the grid_call statements between
! grid_transaction_begin and grid_transaction_end are recorded and run together at the
! end.
!
! The interfaces are bind(C) with no Fortran procedure in between on purpose: gfortran
! 12 drops the length of character arguments forwarded through a non-bind(C) type(*)
! dummy.
module gridrpc
  use, intrinsic :: iso_c_binding, only: c_int, c_char, c_intptr_t, c_int64_t, c_double
  implicit none
  private

  public :: grid_call, grid_call_async, grid_wait, grid_wait_all, grid_wait_any
  public :: grid_probe, grid_cancel, grid_last_error_f
  public :: grid_data_put, grid_data_get, grid_data_new, grid_data_free, grid_data_where
  public :: grid_transaction_begin, grid_transaction_end, grid_transaction_abort
  public :: grid_submit, grid_job_fetch, grid_job_forget

  !> The length a job id variable needs (GRID_JOB_ID_MAX_NP of gridrpc.h).
  integer, parameter, public :: GRID_JOB_ID_LEN = 340

  !> A remote data handle: an array kept on a server (grid_data_put, grid_data_new).
  !> Pass it to grid_call where the function takes that array. Copying the variable
  !> copies the reference, not the data; grid_data_free empties it.
  type, bind(C), public :: grid_data
    integer(c_intptr_t) :: ptr = 0 ! the library's grid_data_np pointer
    integer(c_int64_t) :: tag = 0  ! set while it holds a handle
  end type grid_data

  ! The IDL element types (GRID_TYPE_* of gridrpc.h) for grid_data_new and type=.
  integer, parameter, public :: GRID_TYPE_CHAR = 1
  integer, parameter, public :: GRID_TYPE_SHORT = 2
  integer, parameter, public :: GRID_TYPE_INT = 3
  integer, parameter, public :: GRID_TYPE_LONG = 4
  integer, parameter, public :: GRID_TYPE_LONGLONG = 5
  integer, parameter, public :: GRID_TYPE_FLOAT = 6
  integer, parameter, public :: GRID_TYPE_DOUBLE = 7
  integer, parameter, public :: GRID_TYPE_SCOMPLEX = 8
  integer, parameter, public :: GRID_TYPE_DCOMPLEX = 9

  ! The error codes of gridrpc.h (ierr values).
  integer, parameter, public :: GRID_OK = 0
  integer, parameter, public :: GRID_ERR_CONNECT = 1
  integer, parameter, public :: GRID_ERR_NOT_FOUND = 2
  integer, parameter, public :: GRID_ERR_ARGS = 3
  integer, parameter, public :: GRID_ERR_LIMIT = 4
  integer, parameter, public :: GRID_ERR_PROTOCOL = 5
  integer, parameter, public :: GRID_ERR_CONN_LOST = 6
  integer, parameter, public :: GRID_ERR_TIMEOUT = 7
  integer, parameter, public :: GRID_ERR_SHUTDOWN = 8
  integer, parameter, public :: GRID_ERR_CONFIG = 9
  integer, parameter, public :: GRID_ERR_NOMEM = 10
  integer, parameter, public :: GRID_ERR_CANCELED = 11
  integer, parameter, public :: GRID_ERR_STALE = 12
  integer, parameter, public :: GRID_ERR_FAILED = 13
  integer, parameter, public :: GRID_ERR_BUSY = 14
  integer, parameter, public :: GRID_ERR_IO = 15
  integer, parameter, public :: GRID_ERR_INTERNAL = 16
  integer, parameter, public :: GRID_ERR_CRASHED = 17
  integer, parameter, public :: GRID_ERR_AUTH = 18

  !> The most arguments after the name that grid_call passes.
  integer, parameter, public :: GRID_MAX_ARGS_F = 32

  interface
    !> Calls the remote function NAME with its arguments; blocks until the results are
    !> in the arguments. ierr (optional, keyword): 0 or a GRID_ERR_* code.
    subroutine grid_call(name, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, &
      a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, &
      a30, a31, a32, ierr) &
        bind(C, name='gridrpc_f_call')
      import :: c_int, c_char
      character(kind=c_char, len=*), intent(in) :: name
      type(*), dimension(..), optional :: a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
        a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
        a28, a29, a30, a31, a32
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_call

    !> Starts the call and returns its id at once. The arguments must stay in place
    !> (declare them asynchronous) until grid_wait, grid_wait_any or grid_wait_all,
    !> which copy the results into them.
    subroutine grid_call_async(id, name, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
      a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
      a28, a29, a30, a31, a32, ierr) &
        bind(C, name='gridrpc_f_call_async')
      import :: c_int, c_char
      integer(c_int), intent(out) :: id
      character(kind=c_char, len=*), intent(in) :: name
      type(*), dimension(..), optional, asynchronous :: a1, a2, a3, a4, a5, a6, a7, a8, &
        a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, &
        a25, a26, a27, a28, a29, a30, a31, a32
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_call_async

    !> Submits a call (two-phase): returns once the server keeps it on disk; JOBID
    !> (character(len=GRID_JOB_ID_LEN)) receives 'host:port/HEX', which any process can
    !> fetch later. OUT arguments are not written.
    subroutine grid_submit(jobid, name, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
      a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
      a28, a29, a30, a31, a32, ierr) &
        bind(C, name='gridrpc_f_submit')
      import :: c_int, c_char
      character(kind=c_char, len=*), intent(out) :: jobid
      character(kind=c_char, len=*), intent(in) :: name
      type(*), dimension(..), optional :: a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
        a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
        a28, a29, a30, a31, a32
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_submit

    !> Fetches job JOBID's results into the arguments, which are the submit's (scalars
    !> size the arrays; IN arrays are not read). Waits up to WAIT seconds (real(8));
    !> GRID_ERR_TIMEOUT when the job has not finished yet.
    subroutine grid_job_fetch(jobid, wait, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
      a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
      a28, a29, a30, a31, a32, ierr) &
        bind(C, name='gridrpc_f_job_fetch')
      import :: c_int, c_char, c_double
      character(kind=c_char, len=*), intent(in) :: jobid
      real(c_double), intent(in) :: wait
      type(*), dimension(..), optional :: a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, &
        a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, &
        a28, a29, a30, a31, a32
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_job_fetch

    !> Deletes job JOBID and its result on its server.
    subroutine grid_job_forget(jobid, ierr) bind(C, name='gridrpc_f_job_forget')
      import :: c_int, c_char
      character(kind=c_char, len=*), intent(in) :: jobid
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_job_forget

    !> Waits for call ID and copies its results into its arguments.
    subroutine grid_wait(id, ierr) bind(C, name='gridrpc_f_wait')
      import :: c_int
      integer(c_int), value :: id
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_wait

    !> Waits for every call not yet waited on; ierr: 0 or the first failure's code.
    subroutine grid_wait_all(ierr) bind(C, name='gridrpc_f_wait_all')
      import :: c_int
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_wait_all

    !> Waits for any call not yet waited on; id receives it (0 when none was left).
    subroutine grid_wait_any(id, ierr) bind(C, name='gridrpc_f_wait_any')
      import :: c_int
      integer(c_int), intent(out) :: id
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_wait_any

    !> Cancels call ID; it must still be waited on, and then ends with GRID_ERR_CANCELED.
    subroutine grid_cancel(id, ierr) bind(C, name='gridrpc_f_cancel')
      import :: c_int
      integer(c_int), value :: id
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_cancel

    function gridrpc_f_probe(id, ierr) result(done) bind(C, name='gridrpc_f_probe')
      import :: c_int
      integer(c_int), value :: id
      integer(c_int), optional, intent(out) :: ierr
      integer(c_int) :: done
    end function gridrpc_f_probe

    !> Puts array A on a server (WHERE: 'host:port', a function name, or absent: the
    !> default server); H receives the handle. A rank >= 2 array is stored in C order
    !> (a(i,j) is the IDL's a[i][j]), as grid_call passes it to a function written in C.
    !> TYPE: GRID_TYPE_LONGLONG for an integer(8) array meant for a longlong parameter.
    subroutine grid_data_put(h, a, where, type, ierr) bind(C, name='gridrpc_f_data_put')
      import :: c_int, c_char, grid_data
      type(grid_data), intent(out) :: h
      type(*), dimension(..), intent(in) :: a
      character(kind=c_char, len=*), optional, intent(in) :: where
      integer(c_int), optional, intent(in) :: type
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_data_put

    !> Copies the data of H into A (the same element type and number of elements).
    subroutine grid_data_get(h, a, ierr) bind(C, name='gridrpc_f_data_get')
      import :: c_int, grid_data
      type(grid_data), intent(in) :: h
      type(*), dimension(..), intent(inout) :: a
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_data_get

    !> Frees the data on every server holding it and empties H (an empty H: nothing).
    subroutine grid_data_free(h, ierr) bind(C, name='gridrpc_f_data_free')
      import :: c_int, grid_data
      type(grid_data), intent(inout) :: h
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_data_free

    subroutine gridrpc_f_data_new(h, type, count, ierr) bind(C, name='gridrpc_f_data_new')
      import :: c_int, c_int64_t, grid_data
      type(grid_data), intent(out) :: h
      integer(c_int), value :: type
      integer(c_int64_t), value :: count
      integer(c_int), optional, intent(out) :: ierr
    end subroutine gridrpc_f_data_new

    function gridrpc_f_data_where(h, buf, len) result(n) bind(C, name='gridrpc_f_data_where')
      import :: c_int, c_char, grid_data
      type(grid_data), intent(in) :: h
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_int), value :: len
      integer(c_int) :: n
    end function gridrpc_f_data_where

    !> Opens a transaction: the grid_call statements until grid_transaction_end are
    !> recorded, not run; their arrays are read at the end.
    subroutine grid_transaction_begin(ierr) bind(C, name='gridrpc_f_transaction_begin')
      import :: c_int
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_transaction_begin

    !> Runs the recorded calls (independent ones at once) and copies their results into
    !> the arguments; a failure leaves them untouched.
    subroutine grid_transaction_end(ierr) bind(C, name='gridrpc_f_transaction_end')
      import :: c_int
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_transaction_end

    !> Drops the open transaction: nothing runs.
    subroutine grid_transaction_abort(ierr) bind(C, name='gridrpc_f_transaction_abort')
      import :: c_int
      integer(c_int), optional, intent(out) :: ierr
    end subroutine grid_transaction_abort

    function gridrpc_f_last_error(buf, len) result(n) bind(C, name='gridrpc_f_last_error')
      import :: c_int, c_char
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_int), value :: len
      integer(c_int) :: n
    end function gridrpc_f_last_error
  end interface

contains

  !> .true. when call ID has finished (its results still need grid_wait).
  logical function grid_probe(id, ierr)
    integer, intent(in) :: id
    integer, optional, intent(out) :: ierr
    grid_probe = gridrpc_f_probe(id, ierr) /= 0
  end function grid_probe

  !> A handle with no data yet, for an OUT argument whose result stays on the server:
  !> N elements of TYPE (GRID_TYPE_DOUBLE, ...).
  subroutine grid_data_new(h, type, n, ierr)
    type(grid_data), intent(out) :: h
    integer, intent(in) :: type, n
    integer, optional, intent(out) :: ierr
    call gridrpc_f_data_new(h, type, int(n, c_int64_t), ierr)
  end subroutine grid_data_new

  !> 'host:port' of a server holding H's data ('' when none yet).
  function grid_data_where(h) result(w)
    type(grid_data), intent(in) :: h
    character(len=:), allocatable :: w
    character(kind=c_char) :: buf(300)
    integer :: n, i
    n = gridrpc_f_data_where(h, buf, size(buf))
    allocate (character(len=n) :: w)
    do i = 1, n
      w(i:i) = buf(i)
    end do
  end function grid_data_where

  !> Why this thread's last call failed ('' after a success).
  function grid_last_error_f() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char) :: buf(1200)
    integer :: n, i
    n = gridrpc_f_last_error(buf, size(buf))
    allocate (character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = buf(i)
    end do
  end function grid_last_error_f

  ! Called from C when a call fails and the caller passed no ierr: stopping from Fortran
  ! flushes the Fortran units and exits with a failure status, as a failed statement does.
  subroutine gridrpc_f_stop(msg, len) bind(C, name='gridrpc_f_stop')
    character(kind=c_char), intent(in) :: msg(*)
    integer(c_int), value :: len
    character(len=len) :: text
    integer :: i
    do i = 1, len
      text(i:i) = msg(i)
    end do
    error stop text
  end subroutine gridrpc_f_stop

end module gridrpc
