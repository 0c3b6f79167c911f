! fortran_overhead.f90: the Fortran binding's cost per call over the C API, in one
! process against one server: N calls of test/null_call and of test/echo_double (8
! doubles) from Fortran and from C (null_loop_f.c), in interleaved rounds; the best
! round of each is reported in ns per call.
!
! Usage: fortran_overhead [N]   (GRIDRPC_SERVER=host:port; bench/README.md)
program fortran_overhead
  use gridrpc
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  implicit none
  interface
    function gridrpc_bench_c_null(n) result(s) bind(C, name='gridrpc_bench_c_null')
      import :: c_int, c_double
      integer(c_int), value :: n
      real(c_double) :: s
    end function gridrpc_bench_c_null
    function gridrpc_bench_c_echo(n, len, x, y) result(s) bind(C, name='gridrpc_bench_c_echo')
      import :: c_int, c_double
      integer(c_int), value :: n, len
      real(c_double), intent(in) :: x(*)
      real(c_double), intent(out) :: y(*)
      real(c_double) :: s
    end function gridrpc_bench_c_echo
  end interface
  integer, parameter :: dp = kind(1.0d0), rounds = 5, len = 8
  integer :: n, i, r, ios
  character(len=32) :: arg
  real(dp) :: fnull, cnull, fecho, cecho, t, x(len), y(len)
  integer(8) :: t0, t1, rate

  n = 20000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *, iostat=ios) n
    if (ios /= 0 .or. n < 1) then
      write (0, '(a)') 'Usage: fortran_overhead [N]   (N calls per round, default 20000)'
      stop 2
    end if
  end if
  x = 1
  ! Warm up: descriptors fetched, connection open.
  call grid_call('test/null_call')
  call grid_call('test/echo_double', len, x, y)

  fnull = huge(1.0_dp); cnull = huge(1.0_dp); fecho = huge(1.0_dp); cecho = huge(1.0_dp)
  do r = 1, rounds
    call system_clock(t0, rate)
    do i = 1, n
      call grid_call('test/null_call')
    end do
    call system_clock(t1)
    fnull = min(fnull, real(t1 - t0, dp) / rate / n)
    t = gridrpc_bench_c_null(n)
    if (t < 0) error stop 'C null_call failed'
    cnull = min(cnull, t)

    call system_clock(t0)
    do i = 1, n
      call grid_call('test/echo_double', len, x, y)
    end do
    call system_clock(t1)
    fecho = min(fecho, real(t1 - t0, dp) / rate / n)
    t = gridrpc_bench_c_echo(n, len, x, y)
    if (t < 0) error stop 'C echo_double failed'
    cecho = min(cecho, t)
  end do

  write (*, '(a,i0,a,i0,a)') 'Fortran binding overhead, best of ', rounds, ' rounds of ', n, ' calls'
  write (*, '(a)') 'call                      Fortran ns   C ns   diff ns  ratio'
  write (*, '(a,3f10.0,f8.3)') 'test/null_call          ', fnull * 1d9, cnull * 1d9, (fnull - cnull) * 1d9, fnull / cnull
  write (*, '(a,3f10.0,f8.3)') 'test/echo_double (n=8)  ', fecho * 1d9, cecho * 1d9, (fecho - cecho) * 1d9, fecho / cecho
end program fortran_overhead
