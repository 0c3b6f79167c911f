! fdata_test.f90: remote data handles and transactions from Fortran, against a real
! gridrpcd (tests/fortran.sh starts it and sets GRIDRPC_SERVER): a handle passed to
! many calls gives what the plain calls give, an OUT kept on the server comes back with
! grid_data_get, put/get round trips keep a(i,j), wrong sizes and freed handles are
! refused with the reason; a transaction of independent calls and of a chain gives the
! sequential results exactly, an aborted or failed one leaves the arrays untouched.
! Prints "PASS name" or "FAIL name: why" per check, as fortran_test does.
program fdata_test
  use gridrpc
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer, parameter :: n = 24

  call test_handles()
  call test_errors()
  call test_transactions()
  call test_linpack_chain()
  call test_two_phase()

contains

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

  subroutine fill(a, seed)
    real(dp), intent(out) :: a(:, :)
    integer, intent(in) :: seed
    integer :: i, j
    do j = 1, size(a, 2)
      do i = 1, size(a, 1)
        a(i, j) = modulo(i * 7 + j * 13 + seed * 31, 17) - 8.0_dp + 0.25_dp * seed
      end do
    end do
  end subroutine fill

  subroutine test_handles()
    real(dp) :: a(n, n), b(n, n), c(n, n), c2(n, n), b2(n, n)
    type(grid_data) :: hb, hc
    integer :: ierr, k
    logical :: same
    call fill(a, 1)
    call fill(b, 2)
    call grid_data_put(hb, b, ierr=ierr)
    call check(ierr == 0 .and. len(grid_data_where(hb)) > 0, 'grid_data_put: the handle has a server')
    b2 = 0
    call grid_data_get(hb, b2, ierr=ierr)
    call check(ierr == 0 .and. all(b2 == b), 'grid_data_get gives back a(i,j) as put')
    same = .true.
    do k = 1, 4
      call grid_call('linalg/dmmul', n, a, hb, c, ierr=ierr)
      if (ierr /= 0) exit
      same = same .and. all(abs(c - matmul(a, b)) < 1e-9_dp)
    end do
    call grid_call('linalg/dmmul', n, a, b, c2, ierr=ierr)
    call check(ierr == 0 .and. same .and. all(c == c2), 'an IN handle in 4 calls gives the plain call''s matmul')
    call grid_data_new(hc, GRID_TYPE_DOUBLE, n * n, ierr=ierr)
    call check(ierr == 0 .and. grid_data_where(hc) == '', 'grid_data_new: no data, nowhere yet')
    c = 0
    call grid_call('linalg/dmmul', n, a, hb, hc, ierr=ierr)
    call check(ierr == 0 .and. all(c == 0), 'an OUT handle: the result stays on the server')
    call grid_data_get(hc, c, ierr=ierr)
    call check(ierr == 0 .and. all(c == c2), 'the OUT handle''s data equals the plain result')
    ! the kept result feeds the next call without coming back
    call grid_call('linalg/dmmul', n, hc, b, c, ierr=ierr)
    call grid_call('linalg/dmmul', n, c2, b, b2, ierr=ierr)
    call check(ierr == 0 .and. all(c == b2), 'a kept result as the IN of the next call')
    call grid_data_free(hc)
    call grid_data_free(hb, ierr=ierr)
    call check(ierr == 0 .and. hb%tag == 0, 'grid_data_free empties the handle')
  end subroutine test_handles

  subroutine test_errors()
    real(dp) :: a(n, n), c(n, n), small(3)
    real :: r4(n * n)
    type(grid_data) :: h
    integer :: ierr
    character(len=:), allocatable :: msg
    call fill(a, 3)
    small = 1
    call grid_data_put(h, small, ierr=ierr)
    call grid_call('linalg/dmmul', n, a, h, c, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, 'holds 3 doubles') > 0 .and. index(msg, "'B'") > 0, &
               'a handle of the wrong size is refused naming both sizes', msg)
    call grid_data_free(h)
    call grid_call('linalg/dmmul', n, a, h, c, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, 'freed') > 0, 'a freed handle is refused', msg)
    r4 = 1
    call grid_data_put(h, r4, ierr=ierr)
    call grid_call('linalg/dmmul', n, a, h, c, ierr=ierr)
    msg = grid_last_error_f()
    call check(ierr == GRID_ERR_ARGS .and. index(msg, 'float') > 0, 'a handle of the wrong type is refused', msg)
    call grid_data_get(h, c, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS, 'grid_data_get into an array of another type is refused')
    call grid_data_free(h)
  end subroutine test_errors

  subroutine test_transactions()
    real(dp) :: a(n, n), b(n, n), s1(n, n), s2(n, n), s3(n, n)
    real(dp) :: t1(n, n), t2(n, n), t3(n, n), x(n), y(n)
    type(grid_data) :: hb
    integer :: ierr
    call fill(a, 4)
    call fill(b, 5)
    ! sequential results, on the same server
    call grid_call('linalg/dmmul', n, a, b, s1)
    call grid_call('linalg/dmmul', n, b, a, s2)
    call grid_call('linalg/dmmul', n, s1, s2, s3)
    t1 = 0
    t2 = 0
    t3 = 0
    call grid_transaction_begin(ierr)
    call grid_call('linalg/dmmul', n, a, b, t1, ierr=ierr)
    call grid_call('linalg/dmmul', n, b, a, t2)
    call grid_call('linalg/dmmul', n, t1, t2, t3)
    call check(ierr == 0 .and. all(t1 == 0) .and. all(t3 == 0), 'calls in a transaction are recorded, not run')
    call grid_transaction_end(ierr)
    call check(ierr == 0 .and. all(t1 == s1) .and. all(t2 == s2) .and. all(t3 == s3), &
               'a transaction (two independent calls and one reading both) equals the sequential run')
    ! aborted: nothing runs
    t3 = 0
    call grid_transaction_begin()
    call grid_call('linalg/dmmul', n, a, b, t3)
    call grid_transaction_abort(ierr)
    call check(ierr == 0 .and. all(t3 == 0), 'an aborted transaction leaves the arrays untouched')
    ! 1-D arrays are read at the end, not when recorded
    x = 1
    y = 0
    call grid_transaction_begin()
    call grid_call('test/echo_double', n, x, y)
    x = 5
    call grid_transaction_end(ierr)
    call check(ierr == 0 .and. all(y == 5), 'a contiguous array is read at the end of the transaction')
    ! a handle inside a transaction
    call grid_data_put(hb, b)
    t1 = 0
    call grid_transaction_begin()
    call grid_call('linalg/dmmul', n, a, hb, t1)
    call grid_transaction_end(ierr)
    call check(ierr == 0 .and. all(t1 == s1), 'a handle in a transaction')
    call grid_data_free(hb)
    ! a failed transaction: its error, and the arrays untouched
    t1 = 0
    call grid_transaction_begin()
    call grid_call('linalg/dmmul', n, a, b, t1)
    call grid_call('gridrpc://127.0.0.1:1/linalg/dmmul', n, a, b, t2, ierr=ierr)
    if (ierr /= 0) then
      ! the second call could not even be recorded (its server is down): abort
      call grid_transaction_abort()
    else
      call grid_transaction_end(ierr)
    end if
    call check(ierr /= 0 .and. all(t1 == 0), 'a failing transaction reports it and leaves the arrays')
    call grid_transaction_end(ierr)
    call check(ierr == GRID_ERR_ARGS, 'grid_transaction_end with none open is refused')
  end subroutine test_transactions

  subroutine test_linpack_chain()
    real(dp) :: a(n, n), a0(n, n), b(n, 3), x(n, 3)
    integer :: ipvt(n), info, k, ierr
    real(dp) :: xs(n, 3)
    call fill(a0, 6)
    do k = 1, n
      a0(k, k) = a0(k, k) + 4.0_dp * n
    end do
    call fill(b, 7)
    ! sequential
    a = a0
    call grid_call('linalg/dgefa', n, a, ipvt, info)
    do k = 1, 3
      xs(:, k) = b(:, k)
      call grid_call('linalg/dgesl', n, a, ipvt, xs(:, k), 0)
    end do
    a = a0
    x = b
    info = -1
    call grid_transaction_begin()
    call grid_call('linalg/dgefa', n, a, ipvt, info)
    do k = 1, 3
      call grid_call('linalg/dgesl', n, a, ipvt, x(:, k), 0)
    end do
    call grid_transaction_end(ierr)
    call check(ierr == 0 .and. info == 0 .and. all(x == xs), &
               'a Linpack chain (dgefa, then dgesl of 3 right-hand sides) in a transaction')
  end subroutine test_linpack_chain

  subroutine test_two_phase()
    real(dp) :: a(n, n), b(n, n), c(n, n), c2(n, n)
    character(len=GRID_JOB_ID_LEN) :: job
    character(len=8) :: short
    type(grid_data) :: hb
    integer :: ierr
    call fill(a, 8)
    call fill(b, 9)
    call grid_call('linalg/dmmul', n, a, b, c)
    c2 = 0
    call grid_submit(job, 'linalg/dmmul', n, a, b, c2, ierr=ierr)
    call check(ierr == 0 .and. index(job, '/') > 0 .and. all(c2 == 0), 'grid_submit returns a job id, writes no output')
    a = 0 ! IN arrays are not read by the fetch
    call grid_job_fetch(job, 30.0d0, n, a, b, c2, ierr=ierr)
    call check(ierr == 0 .and. all(c2 == c), 'grid_job_fetch brings the submitted call''s result')
    call grid_job_forget(job, ierr)
    call check(ierr == 0, 'grid_job_forget')
    call grid_job_fetch(job, 0.0d0, n, a, b, c2, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS, 'a forgotten job is unknown')
    call grid_submit(short, 'linalg/dmmul', n, a, b, c2, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS .and. index(grid_last_error_f(), 'does not fit') > 0, &
               'a job id variable too short is refused')
    call grid_data_put(hb, b)
    call grid_submit(job, 'linalg/dmmul', n, a, hb, c2, ierr=ierr)
    call check(ierr == GRID_ERR_ARGS .and. index(grid_last_error_f(), 'cannot take a type(grid_data)') > 0, &
               'a two-phase job refuses a handle')
    call grid_data_free(hb)
  end subroutine test_two_phase

end program fdata_test
