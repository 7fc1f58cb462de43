"""The Raft controller quorum (KRaft): one metadata log, replicated by fetch, with
elections by Vote and BeginQuorumEpoch. The client depends only on the seams in
``protocols``; ``file_log`` and ``file_quorum_store`` are the durable implementations."""
