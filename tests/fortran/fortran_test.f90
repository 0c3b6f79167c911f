! fortran_test.f90: the Fortran binding against a real gridrpcd (tests/fortran.sh starts
! it and sets GRIDRPC_SERVER): real calls, every scalar type, arrays in Fortran order,
! sections, strings, WORK arrays, files, asynchronous calls, errors, and functions
! implemented in Fortran (module fsub). Prints one "PASS name" or "FAIL name: why" line
! per check; tests/fortran.sh turns them into TAP.
!
! Usage: fortran_test          all checks
!        fortran_test stop     a failing call without ierr (must stop the program)
!        fortran_test stop-args  the same for an argument of the wrong type
program fortran_test
  use gridrpc
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  integer, parameter :: dp = kind(1.0d0), sp = kind(1.0)
  character(len=16) :: mode

  mode = ''
  if (command_argument_count() > 0) call get_command_argument(1, mode)
  if (mode == 'stop') then
    call grid_call('test/no_such_function', 1)
    print '(a)', 'still running after a failed call without ierr'
    stop 0
  end if
  if (mode == 'stop-args') call stop_args()

  call test_dmmul()
  call test_linpack()
  call test_scalars()
  call test_int_conversion()
  ! The named codes follow gridrpc.h's GRID_ERROR_MAP, the newest included.
  call check(GRID_ERR_CRASHED == 17 .and. GRID_ERR_AUTH == 18, 'GRID_ERR_AUTH is gridrpc.h''s code 18')
  call test_type_errors()
  call test_transpose_nonsquare()
  call test_dgemv()
  call test_sections()
  call test_flat()
  call test_strings()
  call test_work_and_files()
  call test_async()
  call test_cancel()
  call test_errors()
  call test_fortran_server()

contains

  ! An integer array where test/echo_double takes doubles, without ierr: the program
  ! stops with the binding's own message.
  subroutine stop_args()
    integer :: iv(3)
    iv = 1
    call grid_call('test/echo_double', 3, iv, iv)
    print '(a)', 'still running after a failed call without ierr'
    stop 0
  end subroutine stop_args

  subroutine check(ok, name, why)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: name
    character(len=*), intent(in), optional :: why
    if (ok) then
      print '(2a)', 'PASS ', name
    else if (present(why)) then
      print '(4a)', 'FAIL ', name, ': ', why
    else
      print '(4a)', 'FAIL ', name, ': ', grid_last_error_f()
    end if
  end subroutine check

  subroutine test_dmmul()
    integer, parameter :: n = 7
    real(dp) :: a(n, n), b(n, n), c(n, n)
    integer :: ierr
    call random_number(a)
    call random_number(b)
    c = -1
    call grid_call('linalg/dmmul', n, a, b, c, ierr=ierr)
    call check(ierr == 0 .and. maxval(abs(c - matmul(a, b))) < 1d-12, 'dmmul gives matmul(a, b)')
    ! No ierr: a successful call just returns.
    call grid_call('linalg/dmmul', n, b, a, c)
    call check(maxval(abs(c - matmul(b, a))) < 1d-12, 'dmmul without ierr')
  end subroutine test_dmmul

  subroutine test_linpack()
    integer, parameter :: n = 60
    real(dp) :: a(n, n), lu(n, n), b(n), x(n)
    integer :: info, ierr
    call random_number(a)
    a = a - 0.5_dp
    call random_number(b)
    lu = a
    x = b
    call grid_call('linalg/linpack', n, lu, x, info, ierr=ierr)
    call check(ierr == 0 .and. info == 0 .and. maxval(abs(matmul(a, x) - b)) < 1d-9, 'linpack solves a x = b')
  end subroutine test_linpack

  subroutine test_scalars()
    character(len=1) :: c, co
    integer(2) :: s, so
    integer :: i, io, u, uo
    integer(8) :: l, lo, ll, llo
    real(sp) :: f, fo
    real(dp) :: d, dout
    complex(sp) :: sc, sco
    complex(dp) :: dc, dco
    integer :: ierr
    c = 'Q'; s = -1234_2; i = 123456789; l = -9000000000_8; ll = 123456789012345_8
    f = 1.5_sp; d = -2.25_dp; sc = (1.0_sp, -2.0_sp); dc = (3.5_dp, 4.5_dp); u = -1
    call grid_call('test/echo_scalars', c, s, i, l, ll, f, d, sc, dc, u, &
                   co, so, io, lo, llo, fo, dout, sco, dco, uo, ierr=ierr)
    call check(ierr == 0 .and. co == c .and. so == s .and. io == i .and. lo == l .and. llo == ll .and. &
               fo == f .and. dout == d .and. sco == sc .and. dco == dc .and. uo == u, &
               'every scalar type in and out (20 arguments)')
  end subroutine test_scalars

  subroutine test_int_conversion()
    character(len=1) :: co
    integer(2) :: so
    integer :: io, uo, ierr
    integer(8) :: lo, llo
    real(sp) :: fo
    real(dp) :: dout
    complex(sp) :: sco
    complex(dp) :: dco
    ! Literal default integers for the short, long and long long IN parameters.
    call grid_call('test/echo_scalars', 'x', 7, 8, 9, 10, 1.0_sp, 2.0_dp, (1.0_sp, 0.0_sp), (0.0_dp, 1.0_dp), 11, &
                   co, so, io, lo, llo, fo, dout, sco, dco, uo, ierr=ierr)
    call check(ierr == 0 .and. so == 7 .and. lo == 9 .and. llo == 10 .and. co == 'x', &
               'IN integers of another kind are converted')
    call grid_call('test/echo_scalars', 'x', 70000, 8, 9, 10, 1.0_sp, 2.0_dp, (1.0_sp, 0.0_sp), (0.0_dp, 1.0_dp), 11, &
                   co, so, io, lo, llo, fo, dout, sco, dco, uo, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS .and. index(grid_last_error_f(), 'does not fit') > 0, &
               'an IN integer out of range is refused', grid_last_error_f())
  end subroutine test_int_conversion

  subroutine test_type_errors()
    real(sp) :: x(4), y(4)
    real(dp) :: xd(4), yd(4)
    integer :: ierr
    character(len=:), allocatable :: msg
    x = 1
    call grid_call('test/echo_double', 4, x, y, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, "'in'") > 0 .and. index(msg, 'real(4)') > 0 .and. &
               index(msg, 'real(8)') > 0, 'a real(4) array for a double array is refused, naming both', msg)
    xd = 1
    call grid_call('test/echo_double', 5, xd, yd, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, 'has 4 elements but the call needs 5') > 0, &
               'an array smaller than the call needs is refused', msg)
    call grid_call('linalg/daxpy', 4, 2.0, xd, yd, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, '1.0d0') > 0, 'a real(4) literal for a double says how', msg)
  end subroutine test_type_errors

  subroutine test_transpose_nonsquare()
    integer, parameter :: m = 3, n = 5
    real(dp) :: a(m, n), ref(m, n), big(m + 2, n + 1)
    integer :: i, j, ierr
    do j = 1, n
      do i = 1, m
        a(i, j) = 10 * i + j
      end do
    end do
    ref = a
    ! block2d adds 1 to a[r0..r1)[c0..c1): rows 2..3, columns 3..5 in Fortran terms.
    ref(2:3, 3:5) = ref(2:3, 3:5) + 1
    call grid_call('test/block2d', m, n, 1, 3, 2, 5, a, ierr=ierr)
    call check(ierr == 0 .and. all(a == ref), 'a(i,j) is the IDL a[i][j] (3 x 5, INOUT)')
    ! A larger array passes its leading block; the rest is untouched.
    big = -7
    big(1:m, 1:n) = a
    ref = a
    ref(1:2, 1:1) = ref(1:2, 1:1) + 1
    call grid_call('test/block2d', m, n, 0, 2, 0, 1, big, ierr=ierr)
    call check(ierr == 0 .and. all(big(1:m, 1:n) == ref) .and. all(big(m + 1:, :) == -7) .and. all(big(:, n + 1) == -7), &
               'a larger array passes its leading block')
    ! Too small in one dimension.
    call grid_call('test/block2d', n, m, 0, 1, 0, 1, a, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS .and. index(grid_last_error_f(), 'shape (3,5) but the call needs (5,3)') > 0, &
               'a wrong shape is refused with both shapes', grid_last_error_f())
  end subroutine test_transpose_nonsquare

  subroutine test_dgemv()
    integer, parameter :: m = 4, n = 6
    real(dp) :: a(m, n), x(n), y(m), y0(m)
    integer :: ierr
    call random_number(a)
    call random_number(x)
    call random_number(y)
    y0 = y
    call grid_call('linalg/dgemv', m, n, 2.0_dp, a, x, 0.5_dp, y, ierr=ierr)
    call check(ierr == 0 .and. maxval(abs(y - (2 * matmul(a, x) + 0.5_dp * y0))) < 1d-12, &
               'dgemv with a non-square a(4,6)')
  end subroutine test_dgemv

  subroutine test_sections()
    real(dp) :: x(10), ref(10), big(8, 9), sub(3, 5), refsub(3, 5)
    integer :: i, j, ierr
    x = [(real(i, dp), i = 1, 10)]
    ref = x
    ref(1:10:2) = 2 * ref(1:10:2)
    call grid_call('test/inout_double', 5, x(1:10:2), ierr=ierr)
    call check(ierr == 0 .and. all(x == ref), 'a strided 1-D section (INOUT) is gathered and scattered')
    do j = 1, 9
      do i = 1, 8
        big(i, j) = 100 * i + j
      end do
    end do
    sub = big(2:6:2, 3:7)
    refsub = sub
    refsub(1:3, 1:5) = refsub(1:3, 1:5) + 1
    call grid_call('test/block2d', 3, 5, 0, 3, 0, 5, big(2:6:2, 3:7), ierr=ierr)
    call check(ierr == 0 .and. all(big(2:6:2, 3:7) == refsub) .and. big(3, 3) == 303 .and. big(2, 2) == 202, &
               'a strided 2-D section is transposed in place')
  end subroutine test_sections

  subroutine test_flat()
    real(dp) :: a(2, 3), out(6)
    integer :: ierr
    call random_number(a)
    call grid_call('test/echo_double', 6, a, out, ierr=ierr)
    call check(ierr == 0 .and. all(out == reshape(a, [6])), 'another rank is flat, in array element order')
  end subroutine test_flat

  subroutine test_strings()
    character(len=12) :: s
    character(len=3) :: short
    character(len=8) :: in(3), out(3)
    integer :: k, ierr
    real(dp) :: v
    call grid_call('test/echo_string', 'hello   ', s, ierr=ierr)
    call check(ierr == 0 .and. s == 'hello' .and. s(6:12) == ' ', 'IN string trimmed, OUT string blank-padded')
    call grid_call('test/echo_string', 'truncated', short, ierr=ierr)
    call check(ierr == 0 .and. short == 'tru', 'an OUT string longer than its variable is cut')
    k = 41
    v = 1.25_dp
    s = 'original'
    call grid_call('test/inout_scalars', k, v, s, ierr=ierr)
    call check(ierr == 0 .and. k == 42 .and. v == 2.5_dp .and. s == 'replaced', 'INOUT int, double and string')
    in = [character(len=8) :: 'alpha', '', 'gamma']
    out = 'x'
    call grid_call('test/echo_strings', 3, in, out, ierr=ierr)
    call check(ierr == 0 .and. all(out == in), 'string arrays in and out')
    call grid_call('test/echo_string', 42, s, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS .and. index(grid_last_error_f(), 'character(len=*)') > 0, &
               'a number for a string is refused', grid_last_error_f())
  end subroutine test_strings

  subroutine test_work_and_files()
    real(dp) :: x(5), sum
    integer :: ierr, u
    character(len=32) :: line
    x = [1, 2, 3, 4, 5]
    call grid_call('test/work_sum', 5, x, 0, sum, ierr=ierr)
    call check(ierr == 0 .and. sum == 55, 'a WORK argument only holds its place')
    open (newunit=u, file='f_in.txt', status='replace', action='write')
    write (u, '(a)') 'hello fortran'
    close (u)
    call grid_call('test/file_upper', 'f_in.txt', 'f_out.txt', ierr=ierr)
    line = ''
    if (ierr == 0) then
      open (newunit=u, file='f_out.txt', status='old', action='read')
      read (u, '(a)') line
      close (u)
    end if
    call check(ierr == 0 .and. line == 'HELLO FORTRAN', 'filename arguments')
  end subroutine test_work_and_files

  subroutine test_async()
    integer, parameter :: n = 6, k = 4
    real(dp), asynchronous :: a(n, n, k), b(n, n, k), c(n, n, k)
    real(dp), asynchronous :: x(5)
    integer :: ids(k), id, j, ierr, id2, got
    logical :: ok, done
    call random_number(a)
    call random_number(b)
    c = 0
    do j = 1, k
      ! Sections of one array: the module keeps their C-order copies until the wait.
      call grid_call_async(ids(j), 'linalg/dmmul', n, a(:, :, j), b(:, :, j), c(:, :, j), ierr=ierr)
      if (ierr /= 0) exit
    end do
    call check(ierr == 0 .and. all(ids > 0), 'grid_call_async starts calls')
    call grid_wait_all(ierr)
    ok = ierr == 0
    do j = 1, k
      ok = ok .and. maxval(abs(c(:, :, j) - matmul(a(:, :, j), b(:, :, j)))) < 1d-12
    end do
    call check(ok, 'grid_wait_all copies every result back, transposed')

    x = [1, 2, 3, 4, 5]
    call grid_call_async(id, 'test/inout_double', 5, x, ierr=ierr)
    done = .false.
    do j = 1, 2000
      done = grid_probe(id)
      if (done) exit
      call sleep_ms()
    end do
    call grid_wait(id, ierr)
    call check(done .and. ierr == 0 .and. all(x == [2, 4, 6, 8, 10]), 'grid_probe, then grid_wait')
    call grid_wait(id, ierr)
    call check(ierr == GRID_ERR_ARGS, 'a call waited on is forgotten', grid_last_error_f())

    call grid_call_async(id, 'test/inout_double', 5, x, ierr=ierr)
    call grid_call_async(id2, 'test/sleep', 0.01_dp, ierr=ierr)
    got = 0
    do j = 1, 2
      call grid_wait_any(id, ierr)
      if (ierr == 0 .and. id > 0) got = got + 1
    end do
    call check(got == 2 .and. all(x == [4, 8, 12, 16, 20]), 'grid_wait_any')
  end subroutine test_async

  subroutine sleep_ms()
    integer(8) :: t0, t, rate
    call system_clock(t0, rate)
    do
      call system_clock(t)
      if (t - t0 >= rate / 1000) exit
    end do
  end subroutine sleep_ms

  subroutine test_cancel()
    integer :: id, ierr, ierr2
    call grid_call_async(id, 'test/sleep', 5.0_dp, ierr=ierr)
    call grid_cancel(id, ierr2)
    call grid_wait(id, ierr)
    call check(ierr2 == 0 .and. ierr == GRID_ERR_CANCELED, 'grid_cancel, then the wait says canceled', &
               grid_last_error_f())
  end subroutine test_cancel

  subroutine test_errors()
    integer :: ierr, id
    character(len=:), allocatable :: msg
    call grid_call('test/no_such_function', 1, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_NOT_FOUND .and. len(msg) > 0, 'an unknown function: ierr and a message', msg)
    call grid_call('linalg/dmmul', 3, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, 'takes 4 arguments after its name (n, A, B, C) but 1 was') > 0, &
               'a wrong argument count lists the parameters', msg)
    call grid_call('test/null_call', ierr=ierr)
    call check(ierr == 0 .and. len(grid_last_error_f()) == 0, 'success clears the message')
    call grid_call_async(id, 'test/no_such_function', 1, ierr=ierr)
    call check(ierr == GRID_ERR_NOT_FOUND .and. id == 0, 'an async call that cannot start', grid_last_error_f())
  end subroutine test_errors

  subroutine test_fortran_server()
    integer, parameter :: m = 3, n = 4
    real(dp) :: x(5), a(m, n), v(n), y(m)
    integer :: ierr
    interface
      function gridrpc_f_knows_language() result(yes) bind(C, name='gridrpc_f_knows_language')
        import :: c_int
        integer(c_int) :: yes
      end function gridrpc_f_knows_language
    end interface
    x = [1, 2, 3, 4, 5]
    call grid_call('fsub/fscale', 5, x, 3.0_dp, ierr=ierr)
    call check(ierr == 0 .and. all(x == [3, 6, 9, 12, 15]), 'Calls "Fortran": fscale')
    if (gridrpc_f_knows_language() == 0) then
      print '(a)', 'SKIP Calls "Fortran" with a matrix: the library does not report implementation languages'
      return
    end if
    call random_number(a)
    call random_number(v)
    call grid_call('fsub/fmatvec', m, n, a, v, y, ierr=ierr)
    call check(ierr == 0 .and. maxval(abs(y - matmul(a, v))) < 1d-12, &
               'Calls "Fortran" with a matrix: passed as is, no transposition')
  end subroutine test_fortran_server

end program fortran_test
